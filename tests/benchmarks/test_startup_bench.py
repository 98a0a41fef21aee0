"""benchmarks/startup_bench.py runs end to end on this checkout (one run per row) and its
percentile and MCP measurement are right."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("knowhub_startup_bench", ROOT / "benchmarks" / "startup_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_p95_is_the_nearest_rank() -> None:
    bench = _bench()
    assert bench.p95([3.0, 1.0, 2.0]) == 3.0
    assert bench.p95([float(i) for i in range(1, 101)]) == 95.0
    assert bench.p95([float(i) for i in range(1, 21)]) == 19.0


def test_mcp_initialize_answers_and_is_timed(tmp_path: Path) -> None:
    bench = _bench()
    wall, cpu = bench.mcp_initialize(bench.child_env(), tmp_path / "data")
    assert 0 < cpu <= wall + 1.0 and wall < 120


def test_the_script_prints_every_row(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "startup_bench.py"), "--runs", "1", "--skip-mcp",
         "--skip-hook", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for label in ("python -c pass (floor)", "knowhub --help", "import knowhub ", "import knowhub.tree"):
        assert label in done.stdout
    assert "hook round trip: skipped, --skip-hook" in done.stdout
    rows = {row["what"]: row for row in json.loads(out.read_text(encoding="utf-8"))}
    assert rows["knowhub --help"]["measure"] == "cpu" and rows["knowhub --help"]["median_s"] > 0

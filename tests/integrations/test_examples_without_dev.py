"""The coding-agent examples load with the documented install only (no pytest, no dev extra).

examples/claude_code/run_offline.py and examples/codex/run_offline.py borrow the test
suite's helpers (server process, scripted model servers); a newcomer runs them after
`pip install -e .`, so those helpers must not need pytest.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Make `import pytest` fail in the child, as in an environment without the dev extra, then
# execute the example's module body (its imports) without running main().
LOAD = """
import importlib.util, sys
sys.modules["pytest"] = None
spec = importlib.util.spec_from_file_location("example", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("loaded", callable(module.main))
"""


@pytest.mark.parametrize("example", ["claude_code/run_offline.py", "codex/run_offline.py"])
def test_example_imports_without_pytest(example: str) -> None:
    done = subprocess.run([sys.executable, "-c", LOAD, str(ROOT / "examples" / example)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "loaded True"

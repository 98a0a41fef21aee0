"""benchmarks/llm_protocols.py against the fake server: every task is asked and every
answer is classified (valid, repaired, incomplete, error) exactly."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.fake_openai import Reply, answer, fake_openai, malformed

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("knowhub_llm_protocols", ROOT / "benchmarks" / "llm_protocols.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def scripted(task: str | None, _payload: dict[str, Any]) -> Reply:
    if task == "pick_branch":
        return answer({"action": "missing", "reason": "nothing fits"})  # valid
    if task == "reorganize":
        return answer({"moves": "none", "reason": "tidy"})  # repaired: moves dropped
    if task == "route_knowledge":
        return answer({"reason": "no ids"})  # incomplete: ids missing
    if task == "summarize_session":
        return malformed()  # error
    if task and task.startswith("extract_") and task != "extract_knowledge":
        return answer({"candidates": []})
    return answer({"action": "create_new", "reason": "r", "links": [], "content": "c", "items": [],
                   "task": "t", "types": ["tool"]})


def test_every_task_is_asked_and_classified(bench: ModuleType, tmp_path: Path) -> None:
    with fake_openai() as server:
        server.default = scripted
        report = bench.main(["--base-url", server.base_url, "--model", "fake", "--timeout", "5",
                             "--max-retries", "0", "--quiet", "--out-json", str(tmp_path / "p.json")])
    tasks = report["tasks"]
    assert set(bench.TASKS) <= set(tasks)
    pick = tasks["pick_branch"]
    assert pick["calls"] >= 4 and pick["valid"] == pick["calls"] and pick["fallbacks"] == 0
    assert tasks["reorganize"]["repaired"] == tasks["reorganize"]["calls"] >= 1
    assert tasks["route_knowledge"]["incomplete"] == tasks["route_knowledge"]["calls"] >= 2
    summary = tasks["summarize_session"]
    assert summary["errors"] == summary["calls"] == 1 and summary["error_kinds"] == {"LLMResponseError": 1}
    for row in tasks.values():
        assert row["calls"] == row["valid"] + row["repaired"] + row["incomplete"] + row["errors"]
        assert row["prompt_tokens"] > 0
    assert (tmp_path / "p.json").is_file()


@pytest.mark.parametrize("seed", range(4))
def test_random_answers_of_the_right_types_never_crash_an_engine(bench: ModuleType, seed: int) -> None:
    """Grammar-constrained output of a weak model: right types, any values (negative and
    huge indices, empty and NUL strings, unknown enum values, empty lists)."""
    with fake_openai() as server:
        server.random_answers(seed)
        report = bench.main(["--base-url", server.base_url, "--model", "fake", "--timeout", "5",
                             "--max-retries", "0", "--quiet"])
    assert set(bench.TASKS) <= set(report["tasks"])
    assert all(row["errors"] == 0 for row in report["tasks"].values())

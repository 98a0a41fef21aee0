"""Structure of the hand-written accepted-proposal set (issue 19 §2/§7) and the runner's reading of it.

Every case is an earlier decision, then a question, the assistant's proposal and a short
reply: an accepting reply's case links the earlier decision to the reply and the proposal
(the decision memory cites both); a refusal, a hedge or thanks links nothing.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.providers.llm.local_context_assistant import SWITCHES
from tests.benchmarks.bench_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data" / "context_acceptance_labelled.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))["cases"]


def test_cases_are_a_proposal_and_its_reply_with_a_fixed_split() -> None:
    assert len({c["id"] for c in CASES}) == len(CASES) == 16
    for case in CASES:
        assert case["split"] == ("dev" if int(case["id"][1:]) % 2 else "held_out")
        old, (ask, proposal, reply) = case["sessions"][0]["messages"], case["sessions"][1]["messages"]
        assert [m["role"] for m in (ask, proposal, reply)] == ["user", "assistant", "user"]
        if case["kind"] == "update":
            assert {(lk["old"], lk["new"]) for lk in case["links"]} == {(old[0]["id"], reply["id"]), (old[0]["id"], proposal["id"])}
        else:
            assert case["kind"] in ("reject", "none") and not case["links"]
    for split in ("dev", "held_out"):
        for lang in ("en", "zh"):
            kinds = {c["kind"] for c in CASES if c["split"] == split and c["lang"] == lang}
            assert "update" in kinds and kinds - {"update"}


def test_the_runner_reads_another_update_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SWITCHES, "accepted_decision", True)  # off by default (docs/benchmarks.md)
    bench = load_benchmark("context_updates_bench.py")
    subset = [c for c in CASES if c["id"] in ("a01", "a07")]  # an acceptance and a refusal
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.json"
        path.write_text(json.dumps({"cases": subset}), encoding="utf-8")
        svc = ContextEngineService(Path(tmp) / "ctx", durable=False)
        try:
            report = bench.bench_updates(svc, False, path)
        finally:
            svc.close()
    shipped = report["sweep"][str(report["shipped_window"])]["dev"]
    assert shipped["gold"] == 2 and shipped["hits"] == 2 and shipped["predicted"] == 2  # the refusal links nothing

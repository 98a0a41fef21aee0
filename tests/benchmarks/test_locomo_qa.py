"""benchmarks/locomo_qa.py end to end on a tiny inline LoCoMo sample against the fake
OpenAI server (the numbers of such a run measure nothing; the test keeps the harness whole)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.fake_openai import Reply, answer, fake_openai, malformed

ROOT = Path(__file__).resolve().parents[2]

SAMPLE = [{
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "That's great! I painted a lake sunrise last year."},
        ],
        "session_2_date_time": "1:14 pm on 25 May, 2023",
        "session_2": [
            {"speaker": "Caroline", "dia_id": "D2:1", "text": "I am researching adoption agencies."},
            {"speaker": "Melanie", "dia_id": "D2:2", "text": "I ran a charity race for mental health."},
        ],
    },
    "qa": [
        {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023",
         "evidence": ["D1:1"], "category": 2},
        {"question": "What did Caroline research?", "answer": "Adoption agencies", "evidence": ["D2:1"], "category": 4},
        {"question": "What did Melanie paint?", "answer": "A lake sunrise", "evidence": ["D1:2"], "category": 4},
        {"question": "What did Caroline say about dogs?", "evidence": ["D1:1"], "category": 5,
         "adversarial_answer": "nothing"},
    ],
}]


@pytest.fixture(scope="module")
def qa() -> ModuleType:
    spec = importlib.util.spec_from_file_location("knowhub_locomo_qa", ROOT / "benchmarks" / "locomo_qa.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def scripted(task: str | None, payload: dict[str, Any]) -> Reply:
    """Answers "7 May 2023" to everything; the judge compares with the gold answer."""
    if task == "locomo_answer":
        assert "memories" in payload and payload["question"]
        return answer({"answer": "7 May 2023"})
    if task == "locomo_judge":
        same = payload["generated_answer"].lower() == payload["gold_answer"].lower()
        return answer({"reason": "compared", "label": "CORRECT" if same else "WRONG"})
    return malformed()


def test_runs_end_to_end_against_the_fake_server(qa: ModuleType, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(SAMPLE), encoding="utf-8")
    out = tmp_path / "report.json"
    with fake_openai() as server:
        server.default = scripted
        server.script("locomo_judge", Reply(), answer({"reason": "r", "label": "WRONG"}))  # first: no label
        report = qa.main(["--data", str(data), "--base-url", server.base_url, "--model", "fake",
                          "--timeout", "5", "--out-json", str(out), "--quiet"])
        tasks = server.tasks()
    assert tasks.count("locomo_answer") == 3 and tasks.count("locomo_judge") == 3  # category 5 left out
    summary = report["summary"]
    assert summary["questions"] == 3
    rows = report["rows"]
    # the first judge answer had no label: WRONG, reported as an error
    assert rows[0]["label"] == "WRONG" and rows[0]["error"] == "judge: no CORRECT/WRONG label"
    assert [r["label"] for r in rows[1:]] == ["WRONG", "WRONG"]
    assert summary["j"] == 0.0 and summary["errors"] == 1
    assert set(summary["j_by_category"]) == {"temporal", "single-hop"}
    assert all(r["context_tokens"] > 0 and r["blocks"] > 0 and r["search_ms"] >= 0 for r in rows)
    assert json.loads(out.read_text(encoding="utf-8"))["summary"] == summary
    assert report["anchors"]["mem0 (paper, 2025)"] == "66.9 %"


def test_j_is_the_share_of_correct_labels(qa: ModuleType, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(SAMPLE), encoding="utf-8")
    with fake_openai() as server:
        server.default = scripted
        report = qa.main(["--data", str(data), "--base-url", server.base_url, "--model", "fake", "--quiet"])
    summary = report["summary"]
    assert summary["j"] == pytest.approx(100 / 3, abs=0.01)
    assert summary["j_by_category"]["temporal"] == {"j": 100.0, "n": 1}
    assert summary["j_by_category"]["single-hop"] == {"j": 0.0, "n": 2}


def test_an_unreachable_endpoint_counts_as_wrong(qa: ModuleType, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(SAMPLE), encoding="utf-8")
    with fake_openai() as server:
        server.default = lambda _task, _payload: Reply(content=None, status=500, body={"error": {"message": "down"}})
        report = qa.main(["--data", str(data), "--base-url", server.base_url, "--model", "fake", "--quiet",
                          "--limit", "1"])
    row = report["rows"][0]
    assert row["label"] == "WRONG" and row["error"].startswith("answer: LLMError")


def test_judge_label_parsing(qa: ModuleType) -> None:
    assert qa.judge_label(" correct ") == "CORRECT"
    assert qa.judge_label("INCORRECT") == "WRONG"
    assert qa.judge_label("maybe") is None and qa.judge_label(None) is None

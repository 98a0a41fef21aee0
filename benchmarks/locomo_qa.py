"""LoCoMo question answering from knowhub memories, graded by an LLM judge (J score).

Run from the repository root against any OpenAI-compatible endpoint::

    OPENAI_API_KEY=sk-... python benchmarks/locomo_qa.py --base-url https://api.openai.com/v1 \\
        --model gpt-4o-mini --judge-model gpt-4o-mini --out-json locomo-qa.json
    python benchmarks/locomo_qa.py --base-url http://127.0.0.1:8080/v1 --model local \\
        --conversations 1 --limit 20                     # a local server, a quick look

Protocol. Each conversation's sessions are committed into a fresh
``ContextEngineService`` exactly as ``benchmarks/context_bench.py`` does (same message
shape: id = ``dia_id``, ``name`` = speaker, ``timestamp`` = session date; offline memory
extraction unless ``--extract-with-llm``), then ``flush_index()``. For every question of
categories 1-4 (category 5, adversarial, has no gold answer and is left out, as in the
mem0 paper) ``search_memory(question, top_k)`` returns memory blocks; their abstract,
overview and content excerpt, in rank order, are the only context the answering model
sees. The answer model replies ``{"answer"}``; the judge model compares it with the gold
answer and replies ``{"reason", "label": "CORRECT" | "WRONG"}`` (lenient on wording and
date formats, strict on facts). J = share of CORRECT, overall and per category (LoCoMo
categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop). A failed call counts as
WRONG and is reported. Per question the report keeps the estimated tokens of the retrieved
context (``knowhub.providers.llm.estimate_tokens``), the search latency and the answer
latency.

The numbers depend on the answer and judge models as much as on the memory: compare only
runs with the same models. Published anchors (LLM-judge J, categories 1-4) are printed next
to the result for orientation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from context_bench import CATEGORY_NAMES, QA_CATEGORIES, block_text, turn_messages

from knowhub.context import ContextEngineService
from knowhub.errors import KnowhubError
from knowhub.providers.llm import (
    LLMClient,
    OpenAICompatibleLLM,
    build_task_messages,
    estimate_tokens,
)
from knowhub.scope import RequestContext

console = Console()

#: Published J scores on LoCoMo (LLM judge, categories 1-4), for orientation only.
ANCHORS: tuple[tuple[str, str], ...] = (
    ("mem0 (paper, 2025)", "66.9 %"),
    ("Zep (as reported in the mem0 paper)", "75.1 %"),
    ("full context (mem0 paper)", "72.9 %"),
    ("OpenViking with Doubao (project report)", "80-83 %"),
)

ANSWER_INSTRUCTIONS = (
    "You answer a question about a long conversation between two people, using only the "
    "memories given (each may carry the date of its session). Resolve relative dates such "
    "as 'last week' against those dates and give absolute dates. Answer in a short phrase "
    "(at most a sentence); if the memories do not hold the answer, give your best guess "
    "from them rather than refusing."
)
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}
JUDGE_INSTRUCTIONS = (
    "You grade an answer to a question against the gold answer. Label it CORRECT when it "
    "states the same fact as the gold answer: wording, length and date formats may differ "
    "(a date, month or year that denotes the same time is fine; extra correct detail is "
    "fine). Label it WRONG when it contradicts the gold answer, misses its key fact, or "
    "only hedges. Give a one-sentence reason first."
)
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "label": {"type": "string", "enum": ["CORRECT", "WRONG"]},
    },
    "required": ["reason", "label"],
}


def memory_context(blocks: list[Any]) -> str:
    """The text the answer model sees: one numbered line per block, in rank order."""
    lines = []
    for rank, block in enumerate(blocks, 1):
        when = block.metadata.get("event_time") or block.metadata.get("session_time") or ""
        prefix = f"[{rank}]" + (f" ({when})" if when else "")
        lines.append(f"{prefix} {block_text(block)}")
    return "\n".join(lines)


def ask_answer(llm: LLMClient, question: str, context: str) -> str:
    """The answer model's short answer (raises KnowhubError when the call fails)."""
    payload = {"question": question, "memories": context}
    messages = build_task_messages("locomo_answer", ANSWER_INSTRUCTIONS, payload, ANSWER_SCHEMA)
    answer = llm.chat(messages, ANSWER_SCHEMA).get("answer")
    return answer.strip() if isinstance(answer, str) else ""


def judge_label(raw: Any) -> str | None:
    """CORRECT or WRONG from the judge's label field; None when it is neither."""
    if not isinstance(raw, str):
        return None
    label = raw.strip().upper()
    if label.startswith("CORRECT"):
        return "CORRECT"
    if label.startswith(("WRONG", "INCORRECT")):
        return "WRONG"
    return None


def ask_judge(llm: LLMClient, question: str, gold: str, answer: str) -> tuple[str | None, str]:
    """``(label, reason)``; label None when the judge's answer has no usable label."""
    payload = {"question": question, "gold_answer": gold, "generated_answer": answer}
    messages = build_task_messages("locomo_judge", JUDGE_INSTRUCTIONS, payload, JUDGE_SCHEMA)
    verdict = llm.chat(messages, JUDGE_SCHEMA)
    reason = verdict.get("reason")
    return judge_label(verdict.get("label")), reason if isinstance(reason, str) else ""


def commit_conversation(conv: dict[str, Any], root: Path, llm: LLMClient | None) -> tuple[ContextEngineService, RequestContext]:
    """A service holding every session of ``conv`` (as context_bench commits them), indexed."""
    sample = conv["sample_id"]
    ctx = RequestContext("bench", f"u-{sample}", agent_id=f"a-{sample}")
    service = ContextEngineService(root / sample, llm=llm)
    for session in conv["sessions"]:
        service.commit_session(ctx, turn_messages(session),
                               options={"session_id": f"s{session['index']}", "session_time": session["date_time"]})
    service.flush_index()
    return service, ctx


def answer_question(service: ContextEngineService, ctx: RequestContext, item: dict[str, Any],
                    answer_llm: LLMClient, judge_llm: LLMClient, top_k: int) -> dict[str, Any]:
    """One graded question: context tokens, latencies, answer, label and any error."""
    started = time.perf_counter()
    blocks = list(service.search_memory(ctx, item["question"], top_k=top_k).blocks)
    search_ms = (time.perf_counter() - started) * 1000
    context = memory_context(blocks)
    row: dict[str, Any] = {
        "question": item["question"], "gold": item["answer"], "category": item["category"],
        "context_tokens": estimate_tokens(context), "blocks": len(blocks),
        "search_ms": round(search_ms, 2), "answer": "", "label": "WRONG", "error": None,
    }
    started = time.perf_counter()
    try:
        row["answer"] = ask_answer(answer_llm, item["question"], context)
    except KnowhubError as exc:
        row["error"] = f"answer: {type(exc).__name__}: {exc}"[:300]
    row["answer_ms"] = round((time.perf_counter() - started) * 1000, 2)
    if row["error"] is None:
        try:
            label, reason = ask_judge(judge_llm, item["question"], item["answer"] or "", row["answer"])
        except KnowhubError as exc:
            label, reason = None, ""
            row["error"] = f"judge: {type(exc).__name__}: {exc}"[:300]
        if label is None and row["error"] is None:
            row["error"] = "judge: no CORRECT/WRONG label"
        row["label"] = label or "WRONG"
        row["judge_reason"] = reason
    return row


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """J overall and per category, token and latency statistics."""
    def j(part: list[dict[str, Any]]) -> float:
        return round(100 * sum(r["label"] == "CORRECT" for r in part) / len(part), 2) if part else 0.0

    by_cat: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_cat[row["category"]].append(row)
    tokens = [r["context_tokens"] for r in rows]
    search = sorted(r["search_ms"] for r in rows)
    answer = sorted(r["answer_ms"] for r in rows)

    def p(values: list[float], q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))], 2) if values else 0.0

    return {
        "questions": len(rows),
        "j": j(rows),
        "j_by_category": {CATEGORY_NAMES.get(c, str(c)): {"j": j(part), "n": len(part)}
                          for c, part in sorted(by_cat.items())},
        "errors": sum(r["error"] is not None for r in rows),
        "context_tokens_mean": round(statistics.fmean(tokens), 1) if tokens else 0.0,
        "search_ms_p50": p(search, 0.5), "search_ms_p95": p(search, 0.95),
        "answer_ms_p50": p(answer, 0.5), "answer_ms_p95": p(answer, 0.95),
    }


def build_client(base_url: str | None, model: str, api_key_env: str, timeout_s: float,
                 max_tokens: int = 2048) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(base_url=base_url, model=model, api_key=os.environ.get(api_key_env) or None,
                               timeout_s=timeout_s, max_retries=2, max_concurrency=1, max_tokens=max_tokens)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="LoCoMo QA from knowhub memories, graded by an LLM judge (J).")
    parser.add_argument("--data", type=Path, default=BENCH_DIR / LOCOMO_FILE, help="LoCoMo JSON file")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: OpenAI)")
    parser.add_argument("--model", default="gpt-4o-mini", help="answering model")
    parser.add_argument("--judge-model", default=None, help="judge model (default: --model)")
    parser.add_argument("--judge-base-url", default=None, help="judge endpoint (default: --base-url)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per LLM call")
    parser.add_argument("--max-tokens", type=int, default=2048, help="answer token cap per LLM call (0: none)")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--limit", type=int, default=None, help="at most N questions per conversation")
    parser.add_argument("--top-k", type=int, default=10, help="memory blocks retrieved per question")
    parser.add_argument("--extract-with-llm", action="store_true",
                        help="extract memories with the answering model too (default: offline rules)")
    parser.add_argument("--out-json", type=Path, default=None, help="write the report (with every question)")
    parser.add_argument("--quiet", action="store_true", help="no table")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"LoCoMo file not found: {args.data} (give --data)")
    convs = load_locomo(args.data)[: args.conversations]
    answer_llm = build_client(args.base_url, args.model, args.api_key_env, args.timeout, args.max_tokens)
    judge_llm = build_client(args.judge_base_url or args.base_url, args.judge_model or args.model,
                             args.api_key_env, args.timeout, args.max_tokens)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="locomo-qa-") as tmp:
        for conv in convs:
            service, ctx = commit_conversation(conv, Path(tmp), answer_llm if args.extract_with_llm else None)
            try:
                questions = [q for q in conv["qa"] if q["category"] in QA_CATEGORIES and q["answer"]]
                for item in questions[: args.limit]:
                    row = answer_question(service, ctx, item, answer_llm, judge_llm, args.top_k)
                    rows.append({"sample_id": conv["sample_id"], **row})
            finally:
                service.close()
    report = {
        "benchmark": "locomo_qa",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "answer_model": args.model, "judge_model": args.judge_model or args.model,
        "base_url": args.base_url, "top_k": args.top_k, "extract_with_llm": args.extract_with_llm,
        "summary": summarize(rows),
        "usage": {"answer": answer_llm.usage.as_dict(), "judge": judge_llm.usage.as_dict()},
        "anchors": dict(ANCHORS),
        "rows": rows,
    }
    answer_llm.close()
    judge_llm.close()
    if args.out_json:
        args.out_json.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    if not args.quiet:
        print_report(report)
    return report


def print_report(report: dict[str, Any]) -> None:
    summary = report["summary"]
    table = Table(title=f"LoCoMo QA, J score (answer {report['answer_model']}, judge {report['judge_model']})")
    for column in ("system / category", "J", "questions"):
        table.add_column(column)
    table.add_row("knowhub (this run)", f"{summary['j']:.1f} %", str(summary["questions"]))
    for name, part in summary["j_by_category"].items():
        table.add_row(f"  {name}", f"{part['j']:.1f} %", str(part["n"]))
    for name, value in ANCHORS:
        table.add_row(name, value, "published")
    console.print(table)
    console.print(
        f"context tokens (mean) {summary['context_tokens_mean']}, search p50/p95 "
        f"{summary['search_ms_p50']}/{summary['search_ms_p95']} ms, answer p50/p95 "
        f"{summary['answer_ms_p50']}/{summary['answer_ms_p95']} ms, failed calls {summary['errors']}"
    )


if __name__ == "__main__":
    main()

"""Every decision protocol of every engine against one OpenAI-compatible endpoint, counted.

Run from the repository root, with any server that speaks ``/v1/chat/completions``::

    python benchmarks/llm_protocols.py --base-url http://127.0.0.1:8080/v1 --model gemma-3-270m
    python benchmarks/llm_protocols.py --base-url https://api.deepseek.com/v1 --model deepseek-chat \\
        --api-key-env DEEPSEEK_API_KEY --out-json protocols.json

It builds a small bilingual keyword tree, knowledge hub and context store in a temp dir
and makes each engine take each of its decisions through the endpoint: tree
``pick_branch`` (search descent and auto placement), ``dedup_check``, ``disambiguate``,
``link_info``, ``reorganize``; knowledge ``route_knowledge``, ``evolve_knowledge``,
``merge_knowledge``, ``extract_knowledge``; context ``summarize_session`` and the four
extractors. Per task it counts the answers that fitted the schema as sent (``valid``),
those that needed a field repaired or dropped (``repaired``, see
``knowhub.providers.llm.conform``), those that still lack a required field
(``incomplete``: the engine takes its fallback) and the failed calls (``errors``: timeout,
HTTP error, no JSON: the engine takes its fallback), with latency and tokens. Calls are
made one at a time so that the counts are exact. Nothing here judges answer quality.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from knowhub.context import ContextEngineService
from knowhub.errors import KnowhubError
from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm import LLMClient, OpenAICompatibleLLM, parse_task_message
from knowhub.scope import Principal, RequestContext
from knowhub.tree import KeywordTree

console = Console()

#: The tasks this harness makes the engines ask, in report order.
TASKS: tuple[str, ...] = (
    "pick_branch", "dedup_check", "disambiguate", "link_info", "reorganize",
    "route_knowledge", "evolve_knowledge", "merge_knowledge", "extract_knowledge",
    "summarize_session", "extract_profile", "extract_preferences", "extract_entities_events",
    "extract_procedures",
)


class CountingLLM(LLMClient):
    """Wraps an :class:`OpenAICompatibleLLM`; classifies and times every call, one at a time."""

    def __init__(self, inner: OpenAICompatibleLLM) -> None:
        self.inner = inner
        self.stats: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"calls": 0, "valid": 0, "repaired": 0, "incomplete": 0, "errors": 0,
                     "error_kinds": defaultdict(int), "latency_ms": [], "prompt_tokens": 0,
                     "completion_tokens": 0})
        self._lock = threading.Lock()

    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        try:
            task = parse_task_message(messages)[0]
        except KnowhubError:
            task = "(untagged)"
        with self._lock:
            row = self.stats[task]
            repaired_before = self.inner.repaired_answers
            usage_before = self.inner.usage.as_dict()
            started = time.perf_counter()
            try:
                answer = self.inner.chat(messages, json_schema)
            except KnowhubError as exc:
                row["errors"] += 1
                row["error_kinds"][type(exc).__name__] += 1
                raise
            finally:
                row["calls"] += 1
                row["latency_ms"].append((time.perf_counter() - started) * 1000)
                usage = self.inner.usage.as_dict()
                row["prompt_tokens"] += usage["prompt_tokens"] - usage_before["prompt_tokens"]
                row["completion_tokens"] += usage["completion_tokens"] - usage_before["completion_tokens"]
            if any(key not in answer for key in json_schema.get("required", [])):
                row["incomplete"] += 1
            elif self.inner.repaired_answers > repaired_before:
                row["repaired"] += 1
            else:
                row["valid"] += 1
            return answer


def drive_tree(llm: LLMClient, root: Path) -> None:
    """pick_branch, dedup_check, disambiguate, link_info and reorganize."""
    tree = KeywordTree(root / "tree", llm_client=llm)
    try:
        def kw(name: str, parent: str | None = None, **extra: Any) -> Any:
            return tree.create_keyword(name, parent_id=parent, llm_auto_place=False, **extra)

        tech = kw("技术", aliases=["Technology"])
        lang = kw("编程语言", tech.id, aliases=["Programming languages"])
        kw("Python", lang.id, description="a programming language")
        animals = kw("动物", aliases=["Animals"])
        kw("Python", animals.id, description="a large snake")
        kw("数据库", tech.id, aliases=["Database"])
        kw("JavaScript", lang.id, aliases=["JS"])
        for query in ("蟒蛇", "web framework", "关系型数据"):
            tree.search(query)  # pick_branch (descent)
        tree.create_keyword("Rust")  # pick_branch (auto placement)
        tree.create_keyword("js", aliases=["ECMAScript"], llm_auto_place=False)  # dedup_check
        tree.search("python")  # disambiguate
        tree.create_info("用 Python 和 JavaScript 写数据库工具", auto_link=True)  # link_info
        tree.reorganize()
    finally:
        tree.close()


def drive_knowledge(llm: LLMClient, root: Path) -> None:
    """route_knowledge, merge_knowledge, evolve_knowledge and extract_knowledge."""
    alice = Principal.of("user:alice", ["team:red"])
    hub = KnowledgeHub(root / "knowledge", llm=llm, secret_key=bytes(32), dedup_on_save=False)  # slim merges them
    try:
        first = hub.save(alice, {"task": "Deploy with docker compose", "types": ["tool"], "score": 4,
                                 "content": "Use docker compose up -d to start all services in the background."})
        hub.save(alice, {"task": "Deploy with docker compose", "types": ["tool"], "score": 4,
                         "content": "Use docker compose up -d to start all the services in background."})
        hub.save(alice, {"task": "部署前先跑数据库迁移", "types": ["strategy"], "score": 4,
                         "content": "重启 API 服务之前先执行 alembic upgrade head,否则服务会崩溃。"})
        for query in ("docker compose deploy", "数据库迁移"):
            hub.search(alice, query, top_k=3)
        hub.slim(alice)
        hub.update(alice, first.id, evolve_feedback="also pass --wait so the command returns when healthy")
        hub.extract(alice, [
            {"id": "m1", "role": "user", "content": "Our API crashed after the deploy again."},
            {"id": "m2", "role": "assistant", "content": "Run the migrations before restarting the API; "
                                                          "that fixed it last time."},
        ])
    finally:
        hub.close()


def drive_context(llm: LLMClient, root: Path) -> None:
    """summarize_session and the four extractors (one commit)."""
    service = ContextEngineService(data_dir=root / "context", llm=llm, extractor_concurrency=1)
    ctx = RequestContext(account_id="bench", user_id="alice")
    try:
        service.commit_session(ctx, [
            {"role": "user", "name": "Alice", "content": "I'm Alice, I work at Acme in Berlin as a data engineer."},
            {"role": "assistant", "content": "Nice to meet you, Alice."},
            {"role": "user", "name": "Alice", "content": "I prefer dark roast coffee; 我不喜欢加糖。"},
            {"role": "user", "name": "Alice", "content": "Yesterday I met Bob at the Pergamon museum."},
            {"role": "user", "name": "Alice", "content": "To fix the flaky job I reran it with --retries 3 and it passed."},
        ], options={"session_time": "10:00 on 3 March, 2026"})
        service.flush_index()
    finally:
        service.close()


def summarize(stats: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for task in [*TASKS, *sorted(set(stats) - set(TASKS))]:
        if task not in stats:
            continue
        row = stats[task]
        latency = sorted(row["latency_ms"])
        out[task] = {
            "calls": row["calls"], "valid": row["valid"], "repaired": row["repaired"],
            "incomplete": row["incomplete"], "errors": row["errors"],
            "fallbacks": row["incomplete"] + row["errors"],
            "error_kinds": dict(row["error_kinds"]),
            "latency_ms_p50": round(statistics.median(latency), 1) if latency else 0.0,
            "latency_ms_max": round(latency[-1], 1) if latency else 0.0,
            "prompt_tokens": row["prompt_tokens"], "completion_tokens": row["completion_tokens"],
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="Every engine decision through one endpoint, counted.")
    parser.add_argument("--base-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", default="local", help="model name sent to the endpoint")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per call")
    parser.add_argument("--max-retries", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=2048, help="answer token cap per call (0: none)")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    inner = OpenAICompatibleLLM(base_url=args.base_url, model=args.model,
                                api_key=os.environ.get(args.api_key_env) or None,
                                timeout_s=args.timeout, max_retries=args.max_retries, max_concurrency=1,
                                max_tokens=args.max_tokens)
    llm = CountingLLM(inner)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="llm-protocols-") as tmp:
        for drive in (drive_tree, drive_knowledge, drive_context):
            drive(llm, Path(tmp))
    inner.close()
    report = {"base_url": args.base_url, "model": args.model, "response_format": inner.response_format_mode,
              "seconds": round(time.perf_counter() - started, 1), "tasks": summarize(llm.stats)}
    if args.out_json:
        args.out_json.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    if not args.quiet:
        table = Table(title=f"decision protocols via {args.model} ({report['response_format']})")
        columns = ("task", "calls", "valid", "repaired", "incomplete", "errors", "p50 ms", "max ms",
                   "prompt tok", "completion tok")
        for column in columns:
            table.add_column(column)
        for task, row in report["tasks"].items():
            table.add_row(task, *(str(row[k]) for k in ("calls", "valid", "repaired", "incomplete", "errors",
                                                          "latency_ms_p50", "latency_ms_max", "prompt_tokens",
                                                          "completion_tokens")))
        console.print(table)
    return report


if __name__ == "__main__":
    main()

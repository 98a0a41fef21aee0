"""KnowHub knowledge benchmark on real text: save throughput, search latency, routing
prompt size and retrieval quality.

Run from the repository root::

    python benchmarks/knowledge_bench.py                  # sizes 1k, 10k, 100k (~15-20 min)
    python benchmarks/knowledge_bench.py --quick          # small smoke run (~2 min)
    python benchmarks/knowledge_bench.py --http-items 3000 --out-json out.json
    python benchmarks/knowledge_bench.py --quality-only   # phase 4 (b) and LOCO (~1 min)

Corpus: ``_knowledge_corpus.py`` (LoCoMo observations and turns, ICD-10-CM codes; all real
text, deterministic for ``--seed``).

Phases:

1. **HTTP saves**: a real uvicorn server (``knowhub.server.create_app``) in a child
   process on 127.0.0.1 with one bearer key per user; ``--http-clients`` threads with their
   own ``httpx.Client`` POST ``/api/knowledge`` (``--http-items`` items, separate data dir).
2. **In-process saves**: ``KnowledgeHub.save`` one item at a time (each one a durable,
   fsynced SQLite transaction), then a **bulk load** with ``KnowledgeHub.save_many``
   (one transaction and one index catch-up per call of up to 2,000 items of one writer)
   to reach each size.
3. **Search** at each size for two principals (``member``: one user, sees ~30% of the
   items; ``all``: member of every scope): ``hub.search(q, top_k=5, min_score=3)``. The LLM
   (the default offline ``LocalAgent``) is wrapped to time its calls and capture the
   routing prompt; recall is timed by wrapping the hub's index recall. *Search time
   without LLM* = total − LLM call time. Prompt tokens use ``estimate_tokens`` and are
   compared with seed 002's naive prompt (every visible item's id, types and first 100
   characters of task), built with the same ``build_task_messages``.
4. **Quality** (LoCoMo QA, categories 1-4): recall@5 of the evidence ``dia_id`` s among
   the top-5 results' ``message_id`` s (same conversation), averaged over questions; engine
   vs plain ``BM25Index`` and vs stemmed BM25 (bm25s + PyStemmer, English stop words)
   over the same texts (task + content, what the engine indexes).
   (a) a hub of the 1,210 observations only; (b) the largest hub (observations + turns +
   ICD distractors) with BM25 over the same corpus. One principal that sees everything;
   every item has score 3 and searches use ``min_score=0`` so nothing is filtered and
   quality ties keep routing order. On (b), the relevance fusion weight is validated
   leave-one-conversation-out (``_knowledge_loco.py``).
5. **Profile** (cProfile) of searches at the largest size when p95 without LLM misses
   the target.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BENCH_DIR, ICD_FILE, LOCOMO_FILE, load_icd10cm, load_locomo
from _knowledge_corpus import (
    N_USERS,
    Item,
    all_seeing_principal,
    build_corpus,
    latency_queries,
    locomo_items,
    memberships,
    quality_questions,
    user_id,
    user_principal,
)
from _knowledge_loco import StemmedBM25, loco
from _knowledge_report import TARGET_P95_MS, TOP_K, markdown_tables, print_tables
from _speed import bm25s_baseline, dir_mb, paused, rss_mb

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.search import ROUTE_INSTRUCTIONS, ROUTE_SCHEMA
from knowhub.providers.llm import LLMClient, LocalAgent, build_task_messages
from knowhub.providers.llm.base import messages_tokens
from knowhub.scope import Principal
from knowhub.text import BM25Index

BULK_CHUNK = 2_000


# --------------------------------------------------------------------------- instrumentation


class TimedLLM(LLMClient):
    """Delegates to another LLM client; times every call and keeps the routing prompt."""

    def __init__(self, inner: LLMClient) -> None:
        self.inner = inner
        self.on_call: Callable[[float, list[dict[str, Any]]], None] | None = None
        self.cpu_s = 0.0  # CPU seconds spent in calls (the offline LocalAgent runs here)

    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        start, cpu0 = time.perf_counter(), time.process_time()
        try:
            return self.inner.chat(messages, json_schema)
        finally:
            self.cpu_s += time.process_time() - cpu0
            if self.on_call is not None:
                self.on_call(time.perf_counter() - start, messages)

    @property  # type: ignore[override]
    def semantic(self) -> bool:
        """As the wrapped client (the hub skips routing for the offline LocalAgent)."""
        return self.inner.semantic


@dataclass
class SearchRecord:
    total_s: float = 0.0
    llm_s: float = 0.0
    recall_s: float = 0.0
    sync_s: float = 0.0
    route_s: float = 0.0  # route_candidates: prompt building + LLM + answer mapping
    fetch_s: float = 0.0
    cpu_no_llm_s: float = 0.0  # this process's CPU time, LLM calls excluded
    llm_calls: int = 0
    prompt_tokens: int = 0
    routed_items: int = 0
    recalled: list[str] = field(default_factory=list)


class Probe:
    """Runs ``hub.search`` and records its stage times.

    Stages are timed by wrapping, on this hub only (instance attributes shadow methods),
    the index catch-up (``_sync``), the recall (``_indexes.recall``) and the store fetch
    (``store.fetch_visible``); ``route_candidates`` is wrapped where the hub module looks
    it up. Nothing in the engine changes behaviour.
    """

    def __init__(self, hub: KnowledgeHub, llm: TimedLLM) -> None:
        self.hub = hub
        self.llm = llm
        self.current = SearchRecord()
        llm.on_call = self._on_llm
        self._wrap(getattr(hub, "_indexes", None), "recall", "recall_s", keep=True)
        self._wrap(hub, "_sync", "sync_s")
        self._wrap(getattr(hub, "store", None), "fetch_visible", "fetch_s")
        self._wrap(sys.modules[type(hub).__module__], "route_candidates", "route_s")

    def _wrap(self, owner: Any, name: str, slot: str, *, keep: bool = False) -> None:
        inner = getattr(owner, name, None)
        if owner is None or not callable(inner):
            return

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            result = inner(*args, **kwargs)
            setattr(self.current, slot, getattr(self.current, slot) + time.perf_counter() - start)
            if keep:
                self.current.recalled = [kid for kid, _ in result]
            return result

        setattr(owner, name, timed)

    def _on_llm(self, seconds: float, messages: list[dict[str, Any]]) -> None:
        self.current.llm_s += seconds
        self.current.llm_calls += 1
        self.current.prompt_tokens += messages_tokens(messages)
        with contextlib.suppress(ValueError, KeyError, AttributeError):
            self.current.routed_items += len(json.loads(messages[-1]["content"]).get("items", []))

    def search(
        self, principal: Principal, query: str, *, min_score: float = 3, top_k: int = TOP_K
    ) -> tuple[list[Any], SearchRecord]:
        self.current = SearchRecord()
        llm_cpu0, cpu0 = self.llm.cpu_s, time.process_time()
        start = time.perf_counter()
        hits = self.hub.search(principal, query, top_k=top_k, min_score=min_score)
        self.current.total_s = time.perf_counter() - start
        self.current.cpu_no_llm_s = time.process_time() - cpu0 - (self.llm.cpu_s - llm_cpu0)
        return hits, self.current


def pct(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


# --------------------------------------------------------------------------- HTTP phase

SERVER = r"""
import json, sys, uvicorn
from knowhub.config import Settings
from knowhub.server import create_app
cfg = json.loads(sys.argv[1])
settings = Settings.load(data_dir=cfg["data_dir"], auth={"keys": cfg["keys"]})
uvicorn.run(create_app(settings), host="127.0.0.1", port=cfg["port"], log_level="warning",
            access_log=False)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_phase(items: list[Item], clients: int, work: Path, console: Console) -> dict[str, Any]:
    """POST ``items`` to a live server with ``clients`` concurrent clients."""
    port = free_port()
    keys = {i: f"bench-key-{i:02d}-{os.urandom(6).hex()}" for i in range(N_USERS)}
    cfg = {
        "data_dir": str(work / "http-data"),
        "port": port,
        "keys": [
            {"key": keys[i], "principal": user_id(i), "memberships": memberships(i)}
            for i in range(N_USERS)
        ],
    }
    proc = subprocess.Popen([sys.executable, "-c", SERVER, json.dumps(cfg)])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the knowhub server did not start")
            time.sleep(0.2)
        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        done = [0]

        def worker(part: list[Item]) -> None:
            with httpx.Client(base_url=base, timeout=120) as client:
                for item in part:
                    start = time.perf_counter()
                    resp = client.post(
                        "/api/knowledge",
                        json=item.body,
                        headers={"Authorization": f"Bearer {keys[item.writer]}"},
                    )
                    elapsed = time.perf_counter() - start
                    with lock:
                        latencies.append(elapsed)
                        done[0] += 1
                        if resp.status_code != 201:
                            errors.append(f"{resp.status_code} {resp.text[:200]}")

        threads = [
            threading.Thread(target=worker, args=(items[i::clients],)) for i in range(clients)
        ]
        with progress(console) as bar:
            task = bar.add_task(f"HTTP POST /api/knowledge ({clients} clients)", total=len(items))
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            while any(t.is_alive() for t in threads):
                time.sleep(0.5)
                bar.update(task, completed=done[0])
            wall = time.perf_counter() - start
            bar.update(task, completed=done[0])
        ok = len(items) - len(errors)
        return {
            "items": len(items),
            "clients": clients,
            "ok": ok,
            "errors": len(errors),
            "error_samples": errors[:3],
            "wall_s": round(wall, 2),
            "items_per_s": round(ok / wall, 1),
            "latency_p50_ms": round(pct(latencies, 50) * 1000, 1),
            "latency_p95_ms": round(pct(latencies, 95) * 1000, 1),
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


# --------------------------------------------------------------------------- in-process loads


@dataclass
class Saved:
    """What the naive-prompt baseline needs about every saved item."""

    id: str
    types: list[str]
    task: str
    scopes: frozenset[str]


def save_each(
    hub: KnowledgeHub, items: list[Item], saved: list[Saved], console: Console
) -> dict[str, Any]:
    """``hub.save`` one item at a time: the durable single-write path."""
    latencies: list[float] = []
    with progress(console) as bar:
        task = bar.add_task("in-process hub.save", total=len(items))
        start = time.perf_counter()
        for n, item in enumerate(items, 1):
            t0 = time.perf_counter()
            k = hub.save(user_principal(item.writer), item.body)
            latencies.append(time.perf_counter() - t0)
            saved.append(Saved(k.id, list(k.types), k.task, frozenset(k.scopes)))
            if n % 50 == 0:
                bar.update(task, completed=n)
        wall = time.perf_counter() - start
        bar.update(task, completed=len(items))
    return {
        "items": len(items),
        "wall_s": round(wall, 2),
        "items_per_s": round(len(items) / wall, 1) if wall else 0.0,
        "latency_p50_ms": round(pct(latencies, 50) * 1000, 2),
        "latency_p95_ms": round(pct(latencies, 95) * 1000, 2),
    }


def bulk_load(
    hub: KnowledgeHub, items: list[Item], saved: list[Saved], console: Console, label: str
) -> dict[str, float]:
    """``hub.save_many`` (one transaction and index catch-up per call), batches per writer."""
    by_writer: dict[int, list[Item]] = {}
    for item in items:
        by_writer.setdefault(item.writer, []).append(item)
    batches = [
        group[start : start + BULK_CHUNK]
        for group in by_writer.values()
        for start in range(0, len(group), BULK_CHUNK)
    ]
    done = 0
    with progress(console) as bar:
        task = bar.add_task(label, total=len(items))
        start_t = time.perf_counter()
        for batch in batches:
            stored = hub.save_many(user_principal(batch[0].writer), [i.body for i in batch])
            saved.extend(Saved(k.id, list(k.types), k.task, frozenset(k.scopes)) for k in stored)
            done += len(batch)
            bar.update(task, completed=done)
        wall = time.perf_counter() - start_t
    return {
        "items": len(items),
        "calls": len(batches),
        "wall_s": round(wall, 2),
        "items_per_s": round(len(items) / wall, 1) if wall else 0.0,
    }


def reopen(
    hub: KnowledgeHub, llm: TimedLLM, data_dir: Path, rss_base: float, size: int
) -> tuple[KnowledgeHub, Probe, dict[str, Any]]:
    """Close the hub (it checkpoints its retrieval index) and time a cold open from that
    copy; memory per item = resident memory growth since before the first hub / items."""
    t0 = time.perf_counter()
    hub.close()
    close_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    fresh = KnowledgeHub(data_dir, llm=llm, embedder=hub.embedder)
    cold_s = time.perf_counter() - t0
    gc.collect()
    rss = rss_mb()
    info = {
        "items": fresh._indexes.count(),
        "close_checkpoint_s": round(close_s, 2),
        "cold_start_s": round(cold_s, 2),
        "rss_mb": round(rss, 1),
        "rss_per_item_kb": round((rss - rss_base) * 1024 / max(size, 1), 2),
        "index_copy_mb": round(dir_mb(data_dir / "indexes"), 1),
    }
    return fresh, Probe(fresh, llm), info


# --------------------------------------------------------------------------- search phase


def naive_tokens(saved: Iterable[Saved], principal: Principal, query: str) -> tuple[int, int]:
    """Seed 002's naive routing prompt over every visible item: (tokens, items)."""
    visible = principal.visible_scopes
    entries = [
        {"id": s.id, "types": sorted(s.types), "task": s.task[:100]}
        for s in saved
        if not s.scopes.isdisjoint(visible)
    ]
    messages = build_task_messages(
        "route_knowledge",
        ROUTE_INSTRUCTIONS,
        {"query": query, "k": TOP_K, "items": entries},
        ROUTE_SCHEMA,
    )
    return messages_tokens(messages), len(entries)


def measure_search(
    probe: Probe,
    principal: Principal,
    queries: list[str],
    saved: list[Saved],
    console: Console,
    label: str,
) -> dict[str, Any]:
    for query in queries[:5]:  # warm-up: caches, first-use imports
        probe.search(principal, query)
    records: list[SearchRecord] = []
    hits_n: list[int] = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with progress(console) as bar:
        task = bar.add_task(label, total=len(queries))
        for n, query in enumerate(queries, 1):
            hits, record = probe.search(principal, query)
            records.append(record)
            hits_n.append(len(hits))
            if n % 10 == 0:
                bar.update(task, completed=n)
        bar.update(task, completed=len(queries))
    # CPU seconds / wall seconds of this single-threaded loop: well under 1 means the
    # process waited for a core (the machine is shared) and wall-clock latencies are inflated.
    cpu_share = (time.process_time() - cpu0) / max(time.perf_counter() - wall0, 1e-9)
    total = [r.total_s * 1000 for r in records]
    no_llm = [(r.total_s - r.llm_s) * 1000 for r in records]
    llm = [r.llm_s * 1000 for r in records]
    recall = [r.recall_s * 1000 for r in records]
    stages = {
        "sync": [r.sync_s * 1000 for r in records],
        "prompt": [(r.route_s - r.llm_s) * 1000 for r in records],
        "fetch": [r.fetch_s * 1000 for r in records],
        "other": [
            (r.total_s - r.llm_s - r.recall_s - r.sync_s - (r.route_s - r.llm_s) - r.fetch_s) * 1000
            for r in records
        ],
    }
    rest = [(r.total_s - r.llm_s - r.recall_s) * 1000 for r in records]
    tokens = [r.prompt_tokens for r in records if r.llm_calls]
    median_query = sorted(queries, key=len)[len(queries) // 2]
    naive, visible = naive_tokens(saved, principal, median_query)
    return {
        "queries": len(queries),
        "visible_items": visible,
        "total_p50_ms": round(pct(total, 50), 2),
        "total_p95_ms": round(pct(total, 95), 2),
        "total_p99_ms": round(pct(total, 99), 2),
        "no_llm_p50_ms": round(pct(no_llm, 50), 2),
        "no_llm_p95_ms": round(pct(no_llm, 95), 2),
        "no_llm_p99_ms": round(pct(no_llm, 99), 2),
        **{
            f"no_llm_cpu_p{p}_ms": round(pct([r.cpu_no_llm_s * 1000 for r in records], p), 2)
            for p in (50, 95, 99)
        },
        "no_llm_mean_ms": round(statistics.fmean(no_llm), 2),
        "recall_p50_ms": round(pct(recall, 50), 2),
        "recall_p95_ms": round(pct(recall, 95), 2),
        "rest_p50_ms": round(pct(rest, 50), 2),
        "rest_p95_ms": round(pct(rest, 95), 2),
        "stage_mean_ms": {
            "recall": round(statistics.fmean(recall), 2),
            **{name: round(statistics.fmean(v), 2) for name, v in stages.items()},
            "llm": round(statistics.fmean(llm), 2),
        },
        "llm_p50_ms": round(pct(llm, 50), 2),
        "llm_p95_ms": round(pct(llm, 95), 2),
        "route_calls": sum(r.llm_calls for r in records),
        "routed_items_mean": round(statistics.fmean([r.routed_items for r in records]), 1),
        "prompt_tokens_mean": round(statistics.fmean(tokens), 1) if tokens else 0.0,
        "prompt_tokens_p95": pct(tokens, 95),
        "prompt_tokens_max": max(tokens, default=0),
        "naive_prompt_tokens": naive,
        "mean_hits": round(statistics.fmean(hits_n), 2),
        "cpu_share": round(cpu_share, 2),
    }


def profile_searches(probe: Probe, principal: Principal, queries: list[str]) -> str:
    """cProfile of ``hub.search`` (LLM included: its frames are visible by name)."""
    prof = cProfile.Profile()
    prof.enable()
    for query in queries:
        probe.search(principal, query)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(28)
    stats.sort_stats("tottime").print_stats(18)
    return out.getvalue()


# --------------------------------------------------------------------------- quality


def recall_at(found: Sequence[tuple[str, str]], conv: str, evidence: list[str]) -> float:
    """Share of ``evidence`` dia_ids among ``found`` (conversation, message_id) pairs."""
    got = {mid for c, mid in found if c == conv}
    return sum(1 for e in evidence if e in got) / len(evidence)


def quality_run(
    probe: Probe,
    principal: Principal,
    docs: dict[str, tuple[str, str, str]],
    questions: list[tuple[str, str, int, list[str]]],
    console: Console,
    label: str,
) -> dict[str, Any]:
    """Engine (routed), engine recall stage only, and BM25 over the same texts.

    ``docs`` maps knowledge id → (conversation, message_id, indexed text).
    """
    present = {(conv, mid) for conv, mid, _text in docs.values()}
    # Best possible recall@5: evidence that has a document at all, at most 5 per question.
    ceiling = statistics.fmean(
        min(sum((conv, e) in present for e in evidence), TOP_K) / len(evidence)
        for conv, _q, _cat, evidence in questions
    )
    bm25 = BM25Index()
    for kid, (_conv, _mid, text) in docs.items():
        bm25.add(kid, text)
    stemmed = StemmedBM25({kid: text for kid, (_c, _m, text) in docs.items()})
    scores: dict[str, list[float]] = {"engine": [], "recall_stage": [], "bm25": [], "bm25s": []}
    by_cat: dict[int, dict[str, list[float]]] = {}
    with progress(console) as bar:
        task = bar.add_task(label, total=len(questions))
        for n, (conv, question, cat, evidence) in enumerate(questions, 1):
            hits, record = probe.search(principal, question, min_score=0)
            engine = [
                (h.knowledge.tags.get("conversation", ""), h.knowledge.message_id)
                for h in hits[:TOP_K]
            ]
            stage = [docs[k][:2] for k in record.recalled[:TOP_K] if k in docs]
            plain = [docs[k][:2] for k, _ in bm25.search(question, top_k=TOP_K)]
            row = {
                "engine": recall_at(engine, conv, evidence),
                "recall_stage": recall_at(stage, conv, evidence),
                "bm25": recall_at(plain, conv, evidence),
                "bm25s": recall_at([docs[k][:2] for k in stemmed.search(question)], conv, evidence),
            }
            for name, value in row.items():
                scores[name].append(value)
                by_cat.setdefault(cat, {}).setdefault(name, []).append(value)
            if n % 20 == 0:
                bar.update(task, completed=n)
        bar.update(task, completed=len(questions))
    return {
        "questions": len(questions),
        "documents": len(docs),
        "ceiling": round(ceiling, 4),
        **{f"{name}_recall@5": round(statistics.fmean(v), 4) for name, v in scores.items()},
        "by_category": {
            str(cat): {
                "n": len(v["engine"]),
                **{name: round(statistics.fmean(x), 4) for name, x in v.items()},
            }
            for cat, v in sorted(by_cat.items())
        },
    }


def observations_quality(
    convs: list[dict[str, Any]],
    questions: list[tuple[str, str, int, list[str]]],
    data_dir: Path,
    console: Console,
    result: dict[str, Any],
) -> None:
    """Phase 4 (b): a hub of the LoCoMo observations only, quality and the LOCO check."""
    qllm = TimedLLM(LocalAgent())
    qhub = KnowledgeHub(data_dir, llm=qllm)
    obs = locomo_items(convs, observations=True, turns=False)
    for item in obs:
        item.body["scopes"] = [f"project:{item.conv}"]
    loader = Principal.of("user:loader", [f"project:{c['sample_id']}" for c in convs])
    built = qhub.save_many(loader, [i.body for i in obs])
    qdocs = {
        k.id: (str(k.tags["conversation"]), k.message_id, f"{k.task}\n{k.content}") for k in built
    }
    everyone = all_seeing_principal()
    result.setdefault("quality", {})["observations only"] = quality_run(
        Probe(qhub, qllm), everyone, qdocs, questions, console, "quality @ observations"
    )
    result["loco"] = loco(qhub, everyone, qdocs, questions)
    console.print(f"leave-one-conversation-out: {json.dumps(result['loco'])}")
    qhub.close()


def quality_only(
    args: argparse.Namespace,
    convs: list[dict[str, Any]],
    console: Console,
    result: dict[str, Any],
    t0: float,
) -> dict[str, Any]:
    """``--quality-only``: phase 4 (b) without the size phases."""
    work = Path(tempfile.mkdtemp(prefix="knowledge-bench-", dir=args.work_dir))
    try:
        observations_quality(convs, quality_questions(convs), work / "quality", console, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return finish(args, result, console, t0)


def finish(
    args: argparse.Namespace, result: dict[str, Any], console: Console, t0: float
) -> dict[str, Any]:
    """Print the tables and write the JSON and Markdown outputs."""
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    print_tables(console, result)
    if "profile" in result:
        print(result["profile"])
    console.print(f"machine {result['machine']}; wall {result['wall_s']}s")
    if args.out_json:
        args.out_json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    if args.out_md:
        args.out_md.write_text(markdown_tables(result), encoding="utf-8")
    return result


def engine_state() -> str:
    """Commit of the checkout and whether the knowledge engine has uncommitted changes."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--short", "src/knowhub"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{' + uncommitted changes in src/knowhub' if dirty else ''}"


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        cpu = next(
            (
                line.split(":", 1)[1].strip()
                for line in out.splitlines()
                if line.startswith("Model name")
            ),
            cpu,
        )
    except OSError:
        pass
    from knowhub.providers.embedding import default_embedder

    return {
        "embedder": default_embedder().name,  # KNOWHUB_EMBEDDING__PROVIDER picks it
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--bench-dir",
        type=Path,
        default=BENCH_DIR,
        help="folder with locomo-dev.json and the ICD-10-CM XML",
    )
    parser.add_argument(
        "--sizes", default=None, help='comma-separated, default "1000,10000,100000"'
    )
    parser.add_argument("--http-items", type=int, default=None, help="items saved over HTTP (5000)")
    parser.add_argument("--http-clients", type=int, default=4, help="concurrent HTTP clients")
    parser.add_argument(
        "--inproc-items", type=int, default=None, help="items saved with hub.save one by one (1000)"
    )
    parser.add_argument("--queries", type=int, default=None, help="search queries per size (200)")
    parser.add_argument(
        "--max-size-questions",
        type=int,
        default=None,
        help="LoCoMo questions for quality on the largest hub (250; 0 = skip)",
    )
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="cProfile searches at the largest size (auto: when p95 misses)",
    )
    parser.add_argument("--seed", type=int, default=20260405)
    parser.add_argument("--work-dir", type=Path, default=None, help="temporary data (deleted)")
    parser.add_argument("--keep-data", action="store_true", help="keep the work dir (profiling)")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--out-md", type=Path, default=None, help="tables as Markdown")
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument(
        "--pause-pid",
        type=int,
        action="append",
        default=[],
        help="stop this process of ours while cold starts and searches are timed; repeatable",
    )
    parser.add_argument(
        "--embed-cache",
        type=Path,
        default=None,
        help="stored-text vectors from this cache (benchmarks/_embed_cache.py; queries are "
        "always embedded live; save throughput is then not the embedder's)",
    )
    parser.add_argument(
        "--quality-only",
        action="store_true",
        help="only the observations quality run and its leave-one-conversation-out check",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    args.sizes = [
        int(s) for s in (args.sizes or ("1000,3000" if quick else "1000,10000,100000")).split(",")
    ]
    args.http_items = args.http_items if args.http_items is not None else (200 if quick else 5000)
    args.inproc_items = (
        args.inproc_items if args.inproc_items is not None else (200 if quick else 1000)
    )
    args.queries = args.queries if args.queries is not None else (30 if quick else 200)
    if args.max_size_questions is None:
        args.max_size_questions = 60 if quick else 250
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 200)
    result: dict[str, Any] = {
        "machine": machine_info(),
        "engine": engine_state(),
        "command": " ".join(sys.argv),
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    bench = args.bench_dir
    t0 = time.perf_counter()
    convs = load_locomo(bench / LOCOMO_FILE)
    if args.quality_only:
        return quality_only(args, convs, console, result, t0)
    nodes = load_icd10cm(bench / ICD_FILE)
    sizes = sorted(set(args.sizes))
    corpus = build_corpus(convs, nodes, max(sizes), args.seed)
    if len(corpus) < max(sizes):
        console.print(f"[yellow]only {len(corpus)} items available; sizes capped[/]")
        sizes = sorted({min(s, len(corpus)) for s in sizes})
    queries = latency_queries(convs, nodes, args.queries, args.seed)
    questions = quality_questions(convs)
    console.print(
        f"corpus {len(corpus):,} items ({sum(i.kind == 'observation' for i in corpus)} "
        f"observations, {sum(i.kind == 'turn' for i in corpus)} turns, "
        f"{sum(i.kind == 'icd' for i in corpus):,} ICD-10-CM); {len(queries)} queries, "
        f"{len(questions)} QA questions; data loaded in {time.perf_counter() - t0:.1f}s"
    )

    work = Path(tempfile.mkdtemp(prefix="knowledge-bench-", dir=args.work_dir))
    member, everyone = user_principal(0), all_seeing_principal()
    try:
        if args.http_items > 0:
            result["http"] = http_phase(corpus[: args.http_items], args.http_clients, work, console)
            console.print(f"HTTP: {result['http']}")

        rss_base = rss_mb()
        llm = TimedLLM(LocalAgent())
        embedder = None
        if args.embed_cache is not None:  # stored vectors from the cache, queries live
            from _embed_cache import CachedPassageEmbedder, VectorCache, knowledge_key

            from knowhub.providers.embedding import default_embedder

            inner = default_embedder()
            embedder = CachedPassageEmbedder(inner, VectorCache(args.embed_cache, inner.name), knowledge_key)
            result["embed_cache"] = {"dir": str(embedder.cache.dir), "vectors": len(embedder.cache)}
        hub = KnowledgeHub(work / "main", llm=llm, embedder=embedder)
        probe = Probe(hub, llm)
        result["index"], result["bm25s"] = {}, {}
        saved: list[Saved] = []
        first = min(args.inproc_items, sizes[0])
        result["inprocess_save"] = save_each(hub, corpus[:first], saved, console)
        result["bulk"], result["search"], result["quality"] = {}, {}, {}
        loaded = first
        for size in sizes:
            if size > loaded:
                result["bulk"][str(size)] = bulk_load(
                    hub, corpus[loaded:size], saved, console, f"bulk load {loaded:,} → {size:,}"
                )
                loaded = size
            with paused(args.pause_pid):  # cold start and searches timed alone
                hub, probe, result["index"][str(size)] = reopen(hub, llm, work / "main", rss_base, size)
                console.print(f"index @ {size:,}: {result['index'][str(size)]}")
                result["search"][str(size)] = {
                    who: measure_search(
                        probe, principal, queries, saved, console, f"search @ {size:,} ({who})"
                    )
                    for who, principal in (("member", member), ("all", everyone))
                }
                texts = [f"{i.body['task']}\n{i.body['content']}" for i in corpus[:size]]
                result["bm25s"][str(size)] = bm25s_baseline(texts, queries, hub.candidate_pool)
            console.print(f"bm25s @ {size:,}: {result['bm25s'][str(size)]}")
            console.print(
                f"size {size:,}: "
                + json.dumps(
                    {
                        w: {
                            k: s[k]
                            for k in (
                                "no_llm_p50_ms",
                                "no_llm_p95_ms",
                                "prompt_tokens_max",
                                "naive_prompt_tokens",
                            )
                        }
                        for w, s in result["search"][str(size)].items()
                    }
                )
            )

        largest = result["search"][str(sizes[-1])]["member"]
        if args.profile == "always" or (
            args.profile == "auto" and largest["no_llm_p95_ms"] > TARGET_P95_MS
        ):
            console.print("profiling 40 searches at the largest size (member principal)…")
            result["profile"] = profile_searches(probe, member, queries[:40])

        if args.max_size_questions > 0:
            rng = random.Random(args.seed + 2)
            sample = rng.sample(questions, min(args.max_size_questions, len(questions)))
            docs: dict[str, tuple[str, str, str]] = {}
            with hub.store.read() as conn:
                for batch in hub.store.iter_live(conn):
                    for k in batch:
                        docs[k.id] = (
                            str(k.tags.get("conversation", "")),
                            k.message_id,
                            f"{k.task}\n{k.content}",
                        )
            result["quality"][f"largest hub ({len(docs):,})"] = quality_run(
                probe, everyone, docs, sample, console, f"quality @ {len(docs):,}"
            )
        if embedder is not None:
            result["embed_cache"].update(hits=embedder.hits, misses=embedder.misses)
            embedder.cache.flush()
        hub.close()

        observations_quality(convs, questions, work / "quality", console, result)
    finally:
        if args.keep_data:
            console.print(f"data kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    return finish(args, result, console, t0)


if __name__ == "__main__":
    main()

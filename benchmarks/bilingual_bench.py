"""Bilingual knowledge benchmark: top-1, recall@5 and empty results, engines next to BM25.

Run from the repository root::

    python benchmarks/bilingual_bench.py --out-md out.md --out-json out.json
    python benchmarks/bilingual_bench.py --queries-per-kind 3 --distractors 20   # a quick subset
    python benchmarks/bilingual_bench.py --engines knowledge,bm25-zh             # some engines

Data: ``benchmarks/data/bilingual_knowledge.json`` — hand-written agent knowledge (Chinese,
English, mixed; tool, strategy, usecase, definition, plan, user_profile) and queries labelled
with the items that answer them and a kind: ``shares-words`` (shares a word with its target),
``paraphrase`` (same language, no word in common), ``cross-language`` (Chinese query for an
English item or the reverse), ``no-answer`` (nothing in the set answers it).

Engines, all with offline defaults and only through the public API, so the runner keeps
working while the engines change underneath:

* **knowledge**: ``KnowledgeHub(data_dir)``; every item saved with ``save_many`` (its task,
  content, types, scopes, score, tags, eval) by the set's principal (``user:lin``, member of
  a team, an org, a project and an agent; items are spread over those scopes and public);
  ``hub.search(principal, query, top_k=5)`` with the API's other defaults.
* **context (nodes)**: ``ContextEngineService(data_dir)``; each item written as one memory
  node through ``svc.fs.write_node`` (L0 = task, L1 = content, L2 = both; category from the
  item's first type: user_profile → preferences, tool → tools, plan → skills, strategy and
  usecase → cases, definition → entities; ``metadata.source_refs = [item id]``), indexed with
  ``svc.rebuild_index()``; ``search_memory(ctx, query, top_k=5)``.
* **context (commit)**: the same items told to the agent in conversation: one session per
  domain, one user message per item (``id`` = item id, text = task + content), committed with
  ``commit_session`` and indexed with ``flush_index``; the offline extractors decide what
  memories to keep.
* **BM25 baselines** (bm25s): *stemmed English* — ``bm25s.tokenize`` with English
  stopwords and the PyStemmer English stemmer (the baseline of the knowledge benchmark;
  a Chinese run becomes a single token); *+ Chinese bigrams* — the same for Latin words,
  Chinese runs as characters and character bigrams. Documents are task + content. A document
  with score 0 shares no token with the query and is not returned, so BM25 is empty exactly
  when nothing matches lexically.

A result list is the item ids of the top 5, in order (context: the ``source_refs`` of the
blocks in block order, each id once). Per engine and query kind: **top-1** (the first result
is relevant), **recall@5** (share of the relevant items in the top 5), **wrongly empty**
(answerable query, no result) and, for no-answer queries, **empty** (the share of those
queries with no result — what a relevance threshold should raise). Cross-language queries are
also split into those that share a term with their target (a technical name such as
``Postgres`` or ``helm`` inside a Chinese query) and those that share none. Targets of issue 9 for the
engines offline: top-1 ≥ 0.85 and recall@5 ≥ 0.95 on shares-words queries.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA_FILE = ROOT / "benchmarks" / "data" / "bilingual_knowledge.json"
KINDS = ("shares-words", "paraphrase", "cross-language", "no-answer")
TOP_K = 5
TARGET_TOP1 = 0.85
TARGET_RECALL = 0.95

Searcher = Callable[[str], list[str]]


# ---------------------------------------------------------------------------- data


def load_set(
    path: Path = DATA_FILE, queries_per_kind: int | None = None, distractors: int | None = None
) -> dict[str, Any]:
    """The benchmark set, optionally cut down: the first ``queries_per_kind`` queries of each
    kind, the items they are labelled with, and the first ``distractors`` other items."""
    with path.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    if queries_per_kind is None and distractors is None:
        return data
    queries: list[dict[str, Any]] = []
    for kind in KINDS:
        of_kind = [q for q in data["queries"] if q["kind"] == kind]
        queries.extend(of_kind if queries_per_kind is None else of_kind[:queries_per_kind])
    needed = {r for q in queries for r in q["relevant"]}
    others = [it for it in data["items"] if it["id"] not in needed]
    keep = needed | {it["id"] for it in (others if distractors is None else others[:distractors])}
    return {**data, "items": [it for it in data["items"] if it["id"] in keep], "queries": queries}


def knowledge_body(item: dict[str, Any]) -> dict[str, Any]:
    """The item as a ``KnowledgeHub.save`` body (seed 002 JSON); the benchmark id stays out."""
    fields = ("task", "content", "types", "scopes", "score", "tags")
    body: dict[str, Any] = {k: item[k] for k in fields if k in item}
    if "eval" in item:
        body["eval"] = dict(item["eval"])
    return body


def item_text(item: dict[str, Any]) -> str:
    return f"{item['task']}\n{item['content']}"


# general-language function words: sharing them does not make a query share "words"
_STOP_WORDS = (
    "the a an and or of to in on for with is are be it its this that how what why do does i my we "
    "our you your can from by at as not no so if when into out up one per via use using get set make "
    "all any over than then there their they them was were has have had will would should could "
    "about after before between 我们 们的 怎么 什么 如何 可以 一个 这个"
)
_STOP = frozenset(_STOP_WORDS.split())


def words(text: str) -> set[str]:
    """Latin words (lower case, 3+ letters) and Chinese character bigrams, stopwords aside."""
    out = {w for w in re.findall(r"[a-z][a-z0-9]+", text.lower()) if len(w) >= 3 and w not in _STOP}
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        out.update(b for b in (run[i : i + 2] for i in range(len(run) - 1)) if b not in _STOP)
    return out


def shared_words(query: str, text: str) -> set[str]:
    """Words of ``query`` also in ``text``. Latin words match on a common prefix of up to 5
    letters (a crude stem: ``deploy``/``deployment``, ``swim``/``swims``), so a query said to
    share no word with its target shares none even up to inflection; Chinese bigrams match
    exactly. Defines the kinds of the set (tests/benchmarks/test_bilingual_data.py) and splits
    cross-language queries into those that share a technical term and those that share none."""
    text_words = words(text)
    shared = set()
    for a in words(query):
        for b in text_words:
            if a.isascii() != b.isascii():
                continue
            n = min(5, len(a), len(b)) if a.isascii() else max(len(a), len(b))
            if a[:n] == b[:n]:
                shared.add(a)
    return shared


def shares_a_word(query: dict[str, Any], items: dict[str, dict[str, Any]]) -> bool:
    """Whether the query shares a word with any of its relevant items."""
    return any(shared_words(query["query"], item_text(items[r])) for r in query["relevant"])


def _unique(ids: Iterable[str], limit: int = TOP_K) -> list[str]:
    out: list[str] = []
    for i in ids:
        if i not in out:
            out.append(i)
        if len(out) == limit:
            break
    return out


# ---------------------------------------------------------------------------- engines


def _hit_id(hit: Any) -> str | None:
    """Knowledge id of one search hit, whatever shape the hub returns (SearchHit, dict)."""
    knowledge = getattr(hit, "knowledge", None)
    if knowledge is not None and getattr(knowledge, "id", None):
        return str(knowledge.id)
    if getattr(hit, "id", None):
        return str(hit.id)
    as_dict = hit.to_dict() if hasattr(hit, "to_dict") else hit if isinstance(hit, dict) else {}
    value = as_dict.get("id")
    return str(value) if value else None


def build_knowledge(data: dict[str, Any], workdir: Path) -> tuple[Searcher, Callable[[], None]]:
    """A KnowledgeHub holding every item, searched as the set's principal."""
    from knowhub import KnowledgeHub, Principal

    spec = data["principal"]
    # the set's items sit in public and org: scopes too: the writer holds the publish right
    publishable = ["public", *(m for m in spec["memberships"] if m.startswith("org:"))]
    principal = Principal.of(spec["id"], list(spec["memberships"]), publish=publishable)
    hub = KnowledgeHub(workdir / "knowledge")
    items = data["items"]
    saved = hub.save_many(principal, [knowledge_body(it) for it in items])
    to_bench = {str(k.id): it["id"] for k, it in zip(saved, items, strict=True)}

    def search(query: str) -> list[str]:
        hits = hub.search(principal, query, top_k=TOP_K)
        return _unique(to_bench[h] for h in map(_hit_id, hits) if h in to_bench)

    return search, hub.close


# first type of an item → memory category of the context engine (seed 004 §5.1)
CATEGORY_OF_TYPE = {
    "user_profile": "preferences",
    "tool": "tools",
    "plan": "skills",
    "strategy": "cases",
    "usecase": "cases",
    "definition": "entities",
}


def _context_service(workdir: Path) -> tuple[Any, Any]:
    from knowhub import ContextEngineService, RequestContext

    svc = ContextEngineService(workdir, durable=False)  # throwaway store: no fsync needed
    return svc, RequestContext("acme", "lin", agent_id="helper")


def _context_searcher(svc: Any, ctx: Any) -> Searcher:
    def search(query: str) -> list[str]:
        result = svc.search_memory(ctx, query, top_k=TOP_K)
        refs: list[str] = []
        for block in result.blocks[:TOP_K]:
            refs.extend(str(r) for r in (block.metadata or {}).get("source_refs") or [])
        return _unique(refs)

    return search


def build_context_nodes(data: dict[str, Any], workdir: Path) -> tuple[Searcher, Callable[[], None]]:
    """Each item as one memory node of the user (or agent) space, then a full index rebuild."""
    from knowhub.context.core import ContextNode, memory_uri, slugify

    svc, ctx = _context_service(workdir / "context-nodes")
    taken: set[str] = set()
    for item in data["items"]:
        category = CATEGORY_OF_TYPE[item["types"][0]]
        key = slugify(item["task"])
        uri = memory_uri(ctx, category, key)
        if uri in taken:  # two tasks with one slug: keep both nodes
            uri = memory_uri(ctx, category, slugify(f"{item['task']} {item['id']}"))
        taken.add(uri)
        node = ContextNode(
            uri=uri,
            context_type="memory",
            category=category,
            abstract=item["task"],
            overview=item["content"],
            content=item_text(item),
            metadata={
                "source_refs": [item["id"]],
                "types": list(item["types"]),
                "tags": dict(item.get("tags") or {}),
            },
        )
        svc.fs.write_node(ctx, node)
    svc.rebuild_index()
    return _context_searcher(svc, ctx), svc.close


def build_context_commit(
    data: dict[str, Any], workdir: Path
) -> tuple[Searcher, Callable[[], None]]:
    """The items told in conversation (one session per domain), committed and indexed."""
    svc, ctx = _context_service(workdir / "context-commit")
    sessions: dict[str, list[dict[str, Any]]] = {}
    for item in data["items"]:
        domain = str((item.get("tags") or {}).get("domain") or "general")
        sessions.setdefault(domain, []).append(
            {
                "id": item["id"],
                "role": "user",
                "name": "Lin",
                "content": item_text(item),
                "timestamp": "2026-11-20T10:00:00",
            }
        )
    for domain, messages in sessions.items():
        svc.commit_session(ctx, messages, options={"session_id": f"bilingual-{domain}"})
    svc.flush_index()
    return _context_searcher(svc, ctx), svc.close


_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_TOKEN = re.compile(r"[\u4e00-\u9fff]+|[a-z0-9]+")


def _bm25(tokenize: Callable[[Sequence[str]], list[list[str]]], data: dict[str, Any]) -> Searcher:
    import bm25s

    ids = [it["id"] for it in data["items"]]
    retriever = bm25s.BM25()
    retriever.index(tokenize([item_text(it) for it in data["items"]]), show_progress=False)

    def search(query: str) -> list[str]:
        tokens = tokenize([query])[0]
        if not tokens:
            return []
        scores = retriever.get_scores(tokens)
        order = sorted(range(len(ids)), key=lambda i: -float(scores[i]))[:TOP_K]
        return [ids[i] for i in order if scores[i] > 0]

    return search


def build_bm25_english(data: dict[str, Any], workdir: Path) -> tuple[Searcher, Callable[[], None]]:
    """bm25s with English stopwords and the PyStemmer English stemmer (its own tokenizer)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")

    def tokenize(texts: Sequence[str]) -> list[list[str]]:
        out = bm25s.tokenize(
            list(texts), stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )
        return [list(t) for t in out]

    return _bm25(tokenize, data), lambda: None


def build_bm25_bigrams(data: dict[str, Any], workdir: Path) -> tuple[Searcher, Callable[[], None]]:
    """bm25s over stemmed English words plus Chinese characters and character bigrams."""
    import Stemmer
    from bm25s.stopwords import STOPWORDS_EN

    stemmer = Stemmer.Stemmer("english")
    stop = set(STOPWORDS_EN)

    def tokenize(texts: Sequence[str]) -> list[list[str]]:
        out = []
        for text in texts:
            tokens: list[str] = []
            for piece in _TOKEN.findall(text.lower()):
                if _CJK_RUN.fullmatch(piece):
                    tokens.extend(piece)
                    tokens.extend(piece[i : i + 2] for i in range(len(piece) - 1))
                elif piece not in stop and (len(piece) > 1 or piece.isdigit()):
                    tokens.append(stemmer.stemWord(piece))
            out.append(tokens)
        return out

    return _bm25(tokenize, data), lambda: None


@dataclass(frozen=True)
class Engine:
    """One way to answer the queries: ``build`` loads the items and returns a search function
    (query → item ids, best first) and a close function."""

    name: str
    build: Callable[[dict[str, Any], Path], tuple[Searcher, Callable[[], None]]]
    baseline: bool = False
    key: str = ""  # short name for --engines


ENGINES = (
    Engine("knowledge", build_knowledge, key="knowledge"),
    Engine("context (nodes)", build_context_nodes, key="context-nodes"),
    Engine("context (commit)", build_context_commit, key="context-commit"),
    Engine("BM25 stemmed English", build_bm25_english, baseline=True, key="bm25-en"),
    Engine("BM25 + Chinese bigrams", build_bm25_bigrams, baseline=True, key="bm25-zh"),
)


# ---------------------------------------------------------------------------- scoring


@dataclass
class Outcome:
    """What one engine returned for one query."""

    query_id: str
    results: list[str]
    ms: float
    error: str | None = None


@dataclass
class EngineRun:
    name: str
    baseline: bool
    build_s: float = 0.0
    outcomes: list[Outcome] = field(default_factory=list)
    error: str | None = None


def run_engine(engine: Engine, data: dict[str, Any], workdir: Path) -> EngineRun:
    """Build one engine and run every query; an error is recorded, never fatal to the run."""
    run = EngineRun(engine.name, engine.baseline)
    started = time.perf_counter()
    try:
        search, close = engine.build(data, workdir)
    except Exception as exc:  # a broken engine must not hide the others' numbers
        run.error = f"{type(exc).__name__}: {exc}"
        return run
    run.build_s = time.perf_counter() - started
    try:
        for q in data["queries"]:
            t0 = time.perf_counter()
            try:
                results, error = search(q["query"]), None
            except Exception as exc:
                results, error = [], f"{type(exc).__name__}: {exc}"
            run.outcomes.append(Outcome(q["id"], results, (time.perf_counter() - t0) * 1000, error))
    finally:
        close()
    return run


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def score_group(queries: Sequence[dict[str, Any]], outcomes: dict[str, Outcome]) -> dict[str, Any]:
    """Metrics over one group of queries (answerable and no-answer ones kept apart)."""
    answerable = [q for q in queries if q["relevant"]]
    unanswerable = [q for q in queries if not q["relevant"]]
    top1, recall, wrong_empty = [], [], []
    for q in answerable:
        got = outcomes[q["id"]].results[:TOP_K]
        relevant = set(q["relevant"])
        top1.append(1.0 if got and got[0] in relevant else 0.0)
        recall.append(len(relevant & set(got)) / len(relevant))
        wrong_empty.append(0.0 if got else 1.0)
    empty = [0.0 if outcomes[q["id"]].results else 1.0 for q in unanswerable]
    returned = [float(len(outcomes[q["id"]].results)) for q in queries]
    return {
        "queries": len(queries),
        "answerable": len(answerable),
        "top1": _mean(top1),
        "recall_at_5": _mean(recall),
        "wrongly_empty": _mean(wrong_empty),
        "no_answer": len(unanswerable),
        "empty_on_no_answer": _mean(empty),
        "mean_results": _mean(returned),
        "errors": sum(1 for q in queries if outcomes[q["id"]].error),
    }


def summarize(run: EngineRun, data: dict[str, Any]) -> dict[str, Any]:
    """Per kind, per kind and query language, and overall; latency of the searches."""
    if run.error:
        return {"engine": run.name, "baseline": run.baseline, "error": run.error}
    queries = data["queries"]
    items = {it["id"]: it for it in data["items"]}
    outcomes = {o.query_id: o for o in run.outcomes}
    cross = [q for q in queries if q["kind"] == "cross-language"]
    by_kind = {
        kind: score_group([q for q in queries if q["kind"] == kind], outcomes) for kind in KINDS
    }
    by_kind_lang = {
        f"{kind}/{lang}": score_group(group, outcomes)
        for kind in KINDS
        for lang in ("zh", "en", "mixed")
        if (group := [q for q in queries if q["kind"] == kind and q["lang"] == lang])
    }
    times = sorted(o.ms for o in run.outcomes)
    errors = [f"{o.query_id}: {o.error}" for o in run.outcomes if o.error]
    return {
        "engine": run.name,
        "baseline": run.baseline,
        "build_s": round(run.build_s, 2),
        "search_ms_p50": round(statistics.median(times), 2) if times else None,
        "search_ms_p95": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2)
        if times
        else None,
        "all_answerable": score_group([q for q in queries if q["relevant"]], outcomes),
        "by_kind": by_kind,
        "by_kind_lang": by_kind_lang,
        # cross-language queries often carry a technical name of their target (Postgres, helm)
        "cross_language_split": {
            "shares-a-term": score_group([q for q in cross if shares_a_word(q, items)], outcomes),
            "no-shared-term": score_group(
                [q for q in cross if not shares_a_word(q, items)], outcomes
            ),
        },
        "error_count": len(errors),
        "errors": errors[:10],
        "results": {o.query_id: o.results for o in run.outcomes},
    }


# ---------------------------------------------------------------------------- report


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _mark(value: float | None, target: float) -> str:
    return "" if value is None else (" ✅" if value >= target else " ❌")


def markdown(report: dict[str, Any]) -> str:
    """One table per engine family: rows = engines, columns = metrics per query kind."""
    counts = report["counts"]
    per_kind = ", ".join(f"{k} {counts['by_kind'].get(k, 0)}" for k in KINDS)
    lines = [
        f"Set: {counts['items']} items, {counts['queries']} queries ({per_kind}); top_k = {TOP_K}.",
        "",
        "| engine | shares-words top-1 / R@5 | paraphrase top-1 / R@5 | cross-language top-1 / R@5 "
        "| (cross, shares a term) | (cross, no shared term) | answerable: wrongly empty "
        "| no-answer: empty | no-answer: mean results | search p50 / p95 ms |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for s in report["engines"]:
        if "error" in s:
            lines.append(f"| {s['engine']} | failed: {s['error']} | | | | | | | | |")
            continue
        split = s["cross_language_split"]
        k = s["by_kind"]
        sw = k["shares-words"]
        cells = [
            f"{_fmt(sw['top1'])}{'' if s['baseline'] else _mark(sw['top1'], TARGET_TOP1)} / "
            f"{_fmt(sw['recall_at_5'])}{'' if s['baseline'] else _mark(sw['recall_at_5'], TARGET_RECALL)}",
            f"{_fmt(k['paraphrase']['top1'])} / {_fmt(k['paraphrase']['recall_at_5'])}",
            f"{_fmt(k['cross-language']['top1'])} / {_fmt(k['cross-language']['recall_at_5'])}",
            *(
                f"{_fmt(g['top1'])} / {_fmt(g['recall_at_5'])} (n={g['answerable']})"
                for g in (split["shares-a-term"], split["no-shared-term"])
            ),
            _fmt(s["all_answerable"]["wrongly_empty"]),
            _fmt(k["no-answer"]["empty_on_no_answer"]),
            _fmt(k["no-answer"]["mean_results"]),
            f"{s['search_ms_p50']} / {s['search_ms_p95']}",
        ]
        name = s["engine"] + (" (baseline)" if s["baseline"] else "")
        errors = f" ({s['error_count']} query errors)" if s["error_count"] else ""
        lines.append(f"| {name}{errors} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"✅/❌: issue 9's offline targets on shares-words queries (top-1 ≥ {TARGET_TOP1}, recall@5 ≥ "
        f"{TARGET_RECALL}). *wrongly empty*: answerable queries with no result; *no-answer: empty*: "
        "queries with no answer in the set that got no result (higher is better).",
        "",
        "By query language (top-1 / recall@5; no-answer: empty share):",
        "",
        "| engine | " + " | ".join(key for key in _lang_keys(report)) + " |",
        "|---|" + "---|" * len(_lang_keys(report)),
    ]
    for s in report["engines"]:
        if "error" in s:
            continue
        cells = []
        for key in _lang_keys(report):
            g = s["by_kind_lang"].get(key)
            if g is None:
                cells.append("")
            elif key.startswith("no-answer"):
                cells.append(f"{_fmt(g['empty_on_no_answer'])} (n={g['queries']})")
            else:
                cells.append(f"{_fmt(g['top1'])} / {_fmt(g['recall_at_5'])} (n={g['queries']})")
        lines.append(f"| {s['engine']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _lang_keys(report: dict[str, Any]) -> list[str]:
    keys: list[str] = []
    for s in report["engines"]:
        for key in s.get("by_kind_lang", {}):
            if key not in keys:
                keys.append(key)
    return sorted(keys, key=lambda k: (KINDS.index(k.split("/")[0]), k))


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def select_engines(spec: str) -> list[Engine]:
    """Engines named in ``spec`` (keys or display names, comma-separated; ``all``), in the
    runner's order."""
    if spec.strip() == "all":
        return list(ENGINES)
    wanted = {part.strip() for part in spec.split(",") if part.strip()}
    unknown = wanted - {e.key for e in ENGINES} - {e.name for e in ENGINES}
    if unknown or not wanted:
        raise ValueError(f"unknown engine(s) {sorted(unknown)}; known: {[e.key for e in ENGINES]}")
    return [e for e in ENGINES if e.key in wanted or e.name in wanted]


def run(data: dict[str, Any], engines: Sequence[Engine], workdir: Path) -> dict[str, Any]:
    """Every engine over the set; the whole report as a dict."""
    from collections import Counter

    summaries = []
    for engine in engines:
        print(f"[bilingual] {engine.name} …", file=sys.stderr, flush=True)
        summaries.append(summarize(run_engine(engine, data, workdir), data))
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git_commit(),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        },
        "counts": {
            "items": len(data["items"]),
            "queries": len(data["queries"]),
            "by_kind": dict(Counter(q["kind"] for q in data["queries"])),
        },
        "targets": {"shares_words_top1": TARGET_TOP1, "shares_words_recall_at_5": TARGET_RECALL},
        "engines": summaries,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA_FILE)
    parser.add_argument(
        "--engines",
        default="all",
        help="comma-separated keys (knowledge, context-nodes, context-commit, bm25-en, bm25-zh) "
        "or names, or 'all'",
    )
    parser.add_argument(
        "--queries-per-kind", type=int, default=None, help="only the first N queries of each kind"
    )
    parser.add_argument(
        "--distractors",
        type=int,
        default=None,
        help="only N unlabelled items besides the labelled ones",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the engines' data here (default: a temp dir)",
    )
    parser.add_argument("--out-md", type=Path, default=None)
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)

    try:
        engines = select_engines(args.engines)
    except ValueError as exc:
        parser.error(str(exc))
    data = load_set(args.data, args.queries_per_kind, args.distractors)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bilingual-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        report = run(data, engines, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    table = markdown(report)
    print(table)
    if args.out_md:
        args.out_md.write_text(table, encoding="utf-8")
    if args.out_json:
        args.out_json.write_text(
            json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
    return 1 if any("error" in s for s in report["engines"]) else 0


if __name__ == "__main__":
    sys.exit(main())

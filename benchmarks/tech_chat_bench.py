"""Long technical chats (issue 19): evidence recall of the ContextEngine against BM25, per question type.

Run from the repository root::

    python benchmarks/tech_chat_bench.py                       # both languages, default (E5) embedder
    python benchmarks/tech_chat_bench.py --embedder hashing    # quick: the lexical hashing embedder
    python benchmarks/tech_chat_bench.py --lang zh --out-json out.json
    python benchmarks/tech_chat_bench.py --loo                 # the rules' switches, leave one chat out
    python benchmarks/tech_chat_bench.py --data tech_chats_fresh --trace   # the fresh held-out chats (issue 19 §7)
    python benchmarks/tech_chat_bench.py --data tech_chats_fresh --one-user --distractors tech_chats
    python benchmarks/tech_chat_bench.py --data tech_chats_long --one-user --distractors tech_chats,tech_chats_fresh
    python benchmarks/tech_chat_bench.py --data tech_chats --whatif max_df_ratio=none   # diagnosis: a retriever knob

Data: ``benchmarks/data/tech_chats_en.json`` and ``tech_chats_zh.json``, written for this
project: a user plans and codes a project with an assistant over several sessions
(decisions, configuration, code blocks, fixes, preferences, instructions, and a later
message that changes an earlier decision). Every question cites its gold message ids and
has a type: ``fact``, ``update``, ``instruction``, ``preference``, ``event_order``,
``summary`` or ``assistant`` (the answer is in what the assistant said).
``--data tech_chats_fresh`` reads ``tech_chats_fresh_{en,zh}.json`` instead: four chats
written for issue 19 §7 without reading the engine's rules (built by
``benchmarks/build_fresh_chats.py``), with a ``contradiction`` type besides.
``--data tech_chats_long`` reads one long single-project chat per language (12+ sessions,
120+ messages, ~30k tokens; ``build_fresh_chats.py --set long``), every type included.

Protocol (the LoCoMo benchmark's, :mod:`context_bench`): each chat is committed session by
session through ``ContextEngineService.commit_session`` with the default offline settings
(messages ``{id, role, content, timestamp}``: user and assistant, no speaker names), then
``flush_index()``. For every question, ``search_memory(question, top_k=40)`` ranks memory
blocks; walking them in rank order, the message ids their ``source_refs`` cite are
collected until the budget (10 messages) is spent (:func:`context_bench.collect`);
recall = share of the gold ids collected. Baseline: BM25 (``bm25s``) over the raw messages,
one message one document; tokens are PyStemmer English stems without bm25s's English stop
words, and for Chinese every character and character bigram (bm25s's own tokenizer keeps a
Chinese run as one token).

``--loo`` validates the switches of the assistant-message rules
(:data:`knowhub.providers.llm.local_context_assistant.SWITCHES`) leave one chat out: every
variant (the shipped default, and each switch flipped alone) runs on every chat; fold *i*
takes the variant with the best question-weighted recall on the other chats and reports it
on chat *i*.

Also reported, the issue's diagnostics: how many memory nodes and how many entity nodes a
chat produced, how many node citations point at assistant messages, and the share of gold
messages cited by any node at all.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _commit_budget import BENCH_LIMITS, checked_commit
from context_bench import collect, recall

from knowhub.context import ContextEngineService
from knowhub.context.core.enums import MemoryCategory
from knowhub.context.core.uri import category_root_uri
from knowhub.providers.llm import local_context_assistant as assistant_rules
from knowhub.scope import RequestContext

console = Console()
DATA_DIR = Path(__file__).resolve().parent / "data"
TYPES = ("fact", "update", "contradiction", "instruction", "preference", "event_order", "summary", "assistant")
_LATIN = re.compile(r"[A-Za-z0-9_]+")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")


def load_chats(langs: list[str], data: str = "tech_chats") -> list[dict[str, Any]]:
    """The chats of the given languages (``en``, ``zh``) from ``data/<data>_<lang>.json``; a
    language the set lacks is skipped (the xl3 set is English only), no file at all exits with
    a one-line error."""
    chats = []
    files = [DATA_DIR / f"{data}_{lang}.json" for lang in langs]
    if not any(f.exists() for f in files):
        raise SystemExit(f"no chats for {data!r} in {', '.join(langs)}: none of {', '.join(f.name for f in files)} "
                         f"under {DATA_DIR}")
    for path in files:
        if path.exists():
            chats.extend(json.loads(path.read_text(encoding="utf-8"))["conversations"])
    return chats


class BM25Messages:
    """bm25s over raw messages (module doc: stems for Latin, characters and bigrams for Chinese)."""

    def __init__(self, ids: list[str], texts: list[str]) -> None:
        import bm25s
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN

        self._stem = Stemmer.Stemmer("english").stemWord
        self._stop = set(STOPWORDS_EN)
        self.ids = ids
        self.retriever = bm25s.BM25()
        self.retriever.index([self.tokens(t) or ["<empty>"] for t in texts], show_progress=False)

    def tokens(self, text: str) -> list[str]:
        out = [self._stem(w) for w in (m.lower() for m in _LATIN.findall(text)) if w not in self._stop]
        for run in _CJK_RUN.findall(text):
            out.extend(run)
            out.extend(run[i:i + 2] for i in range(len(run) - 1))
        return out

    def search(self, query: str, k: int) -> list[str]:
        tokens = self.tokens(query)
        if not tokens:
            return []
        docs, _ = self.retriever.retrieve([tokens], k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[int(i)] for i in docs[0]]


def all_nodes(svc: ContextEngineService, ctx: RequestContext) -> list[Any]:
    """Every memory node of the chat's user and agent spaces."""
    nodes = []
    for category in MemoryCategory:
        root = category_root_uri(ctx, category)
        try:
            children = svc.list_children(ctx, root, recursive=True, depth=4)
        except Exception:  # a category with no memories has no directory
            children = []
        if category is MemoryCategory.PROFILE:
            with contextlib.suppress(Exception):  # no profile yet
                nodes.append(svc.get_node(ctx, root))
        nodes.extend(svc.get_node(ctx, c.uri) for c in children if getattr(c, "is_node", True))
    return nodes


def one_user(chats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chats of each language as one user's history (two projects, sessions in date order):
    a larger haystack, and questions about one project meet the other's look-alikes."""
    merged = []
    for lang in dict.fromkeys(c["language"] for c in chats):
        mine = [c for c in chats if c["language"] == lang]
        sessions = sorted(({**s, "id": f"{c['id']}-{s['id']}"} for c in mine for s in c["sessions"]), key=lambda s: s["date"])
        merged.append({"id": f"{lang}-user", "language": lang, "sessions": sessions,
                       "questions": [q for c in mine for q in c["questions"]]})
    return merged


def _trace(blocks: list[Any], limit: int = 6) -> list[dict[str, Any]]:
    """The first blocks of an answer, for reading failures: uri, cited ids, abstract."""
    return [{"uri": b.uri, "refs": [str(r) for r in b.metadata.get("source_refs") or []],
             "abstract": (b.abstract or b.overview or "")[:160]} for b in blocks[:limit]]


def _why_missed(gold: list[str], got: list[str], ranked: list[list[str]], blocks: list[Any],
                cited_by: dict[str, list[Any]]) -> dict[str, Any]:
    """For reading failures: where each missed gold message first appears in the ranked blocks
    (1-based, None: not in the top_k), how many blocks the budget walked and how many of them
    cite several messages, and the nodes that cite the missed message (uri, abstract)."""
    walked, seen = 0, set()
    for refs in ranked:
        walked += 1
        seen.update(refs)
        if len(seen) >= len(got) and set(got) <= seen:
            break
    return {"walked": walked, "walked_multi": sum(1 for refs in ranked[:walked] if len(refs) > 1),
            "walked_uris": [b.uri.split("/memories/")[-1][:60] for b in blocks[:walked]],
            "missed": {g: {"rank": next((i + 1 for i, refs in enumerate(ranked) if g in refs), None),
                           "nodes": [(n.uri.split("/memories/")[-1][:60], (n.abstract or "")[:140])
                                     for n in cited_by.get(g, [])][:3]}
                       for g in gold if g not in got}}


def parse_whatif(spec: str) -> dict[str, Any]:
    """``max_df_ratio=none,vector_weight=1.0`` as RetrieverConfig overrides."""
    out: dict[str, Any] = {}
    for item in spec.split(","):
        key, _, value = item.partition("=")
        out[key.strip()] = None if value.lower() == "none" else int(value) if value.isdigit() else float(value)
    return out


def run_chat(chat: dict[str, Any], root: Path, budget: int, top_k: int, embedder: Any,
             trace: bool = False, whatif: list[str] | None = None, pair_split: bool | None = None) -> dict[str, Any]:
    """Commit one chat, answer its questions; per-question recall of the service and BM25.

    ``whatif``: diagnosis only — the same committed chat is also searched with each listed
    override of the first-round retriever's knobs (over the service's own default), and each
    question's recall under it lands in ``row["whatif"]``."""
    ctx = RequestContext("bench", f"u-{chat['id']}", agent_id=f"a-{chat['id']}")
    svc = ContextEngineService(root / chat["id"], durable=False, embedder=embedder, limits=BENCH_LIMITS)
    if pair_split is not None:  # None: the service's default
        svc.pair_split = pair_split
    messages: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    for session in chat["sessions"]:
        msgs = [{**m, "timestamp": session["date"]} for m in session["messages"]]
        messages.update({m["id"]: m for m in msgs})
        checked_commit(svc, ctx, msgs, {"session_id": f"{chat['id']}-{session['id']}", "session_time": session["date"]})
    commit_s = time.perf_counter() - started
    started = time.perf_counter()
    svc.flush_index()
    index_s = time.perf_counter() - started

    nodes = all_nodes(svc, ctx)
    cited: set[str] = set()
    citations = assistant_citations = 0
    for node in nodes:
        refs = [str(r) for r in node.metadata.get("source_refs") or []]
        cited.update(refs)
        citations += len(refs)
        assistant_citations += sum(1 for r in refs if messages.get(r, {}).get("role") == "assistant")
    entity_nodes = [n for n in nodes if "/memories/entities/" in n.uri]
    cited_by: dict[str, list[Any]] = defaultdict(list)
    for node in nodes:
        for ref in node.metadata.get("source_refs") or []:
            cited_by[str(ref)].append(node)
    by = {n.uri: n.metadata.get("source_refs") for n in nodes}

    ids = list(messages)
    bm25 = BM25Messages(ids, [messages[i]["content"] for i in ids])
    rows = []
    for q in chat["questions"]:
        gold = q["gold"]
        result = svc.search_memory(ctx, q["question"], top_k=top_k)
        ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in result.blocks]
        got = collect(ranked, budget)
        got_bm25 = collect([[d] for d in bm25.search(q["question"], budget)], budget)
        row = {
            "id": q["id"], "type": q["type"],
            "engine": recall(gold, got),
            "bm25": recall(gold, got_bm25),
            "gold_assistant": sum(1 for g in gold if messages[g]["role"] == "assistant") / len(gold),
            "gold_cited": sum(1 for g in gold if g in cited) / len(gold),
        }
        if trace:
            row.update(question=q["question"], gold=gold, engine_ids=got, bm25_ids=got_bm25,
                       missed=[g for g in gold if g not in got], uncited=[g for g in gold if g not in cited],
                       blocks=_trace(result.blocks), why=_why_missed(gold, got, ranked, result.blocks, cited_by))
        rows.append(row)
    shipped = svc.retriever.config
    for spec in whatif or []:
        svc.retriever.config = dataclasses.replace(shipped, **parse_whatif(spec))
        for q, row in zip(chat["questions"], rows, strict=True):
            blocks = svc.search_memory(ctx, q["question"], top_k=top_k).blocks
            ranked = [[str(r) for r in b.metadata.get("source_refs") or []] for b in blocks]
            row.setdefault("whatif", {})[spec] = recall(q["gold"], collect(ranked, budget))
    svc.retriever.config = shipped
    svc.close()
    return {
        "chat": chat["id"], "language": chat["language"], "messages": len(messages),
        "assistant_messages": sum(1 for m in messages.values() if m["role"] == "assistant"),
        "nodes": len(nodes), "entity_nodes": len(entity_nodes),
        "entities": sorted(n.uri.rsplit("/", 1)[-1] for n in entity_nodes),
        "citations": citations, "assistant_citations": assistant_citations,
        "commit_s": round(commit_s, 2), "index_s": round(index_s, 2), "questions": rows,
        # issue 19 §1-2 diagnostics: instruction/preference memories and the update links
        "preference_nodes": sum(1 for n in nodes if "/memories/preferences/" in n.uri),
        "instruction_nodes": sum(1 for n in nodes if n.metadata.get("kind") == "instruction"),
        "superseded": [{"old": n.metadata.get("source_refs"), "by": by.get(n.metadata["superseded_by"])}
                       for n in nodes if n.metadata.get("superseded_by")],
    }


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summarize(chats: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall per question type and overall, per language and for all chats."""
    out: dict[str, Any] = {}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for chat in chats:
        groups[chat["language"]].extend(chat["questions"])
        groups["all"].extend(chat["questions"])
    for name, rows in groups.items():
        per_type = {}
        for qtype in TYPES:
            sel = [r for r in rows if r["type"] == qtype]
            if sel:
                per_type[qtype] = {"n": len(sel), "engine": round(_mean([r["engine"] for r in sel]), 3),
                                   "bm25": round(_mean([r["bm25"] for r in sel]), 3),
                                   "gold_assistant": round(_mean([r["gold_assistant"] for r in sel]), 3)}
        specs = dict.fromkeys(k for r in rows for k in r.get("whatif", {}))
        whatif = {spec: {"all": round(_mean([r["whatif"][spec] for r in rows]), 3),
                         **{t: round(_mean([r["whatif"][spec] for r in rows if r["type"] == t]), 3)
                            for t in TYPES if any(r["type"] == t for r in rows)}} for spec in specs}
        out[name] = {"n": len(rows), "engine": round(_mean([r["engine"] for r in rows]), 3), "whatif": whatif,
                     "bm25": round(_mean([r["bm25"] for r in rows]), 3),
                     "gold_cited": round(_mean([r["gold_cited"] for r in rows]), 3), "by_type": per_type}
    return out


def _label(variant: dict[str, bool]) -> str:
    return " ".join(f"{k}{'+' if v else '-'}" for k, v in sorted(variant.items()))


def run_loo(chats: list[dict[str, Any]], root: Path, budget: int, top_k: int, embedder: Any) -> dict[str, Any]:
    """Every switch variant on every chat, then the leave-one-chat-out choice (module doc)."""
    default = dict(assistant_rules.SWITCHES)
    variants = [default] + [{**default, name: not default[name]} for name in sorted(default)]
    table: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for n, variant in enumerate(variants):
            assistant_rules.SWITCHES.update(variant)
            name = _label(variant)
            table[name] = {c["id"]: run_chat(c, root / f"v{n}", budget, top_k, embedder)["questions"] for c in chats}
            console.print(f"  {name}: " + ", ".join(f"{k} {_mean([q['engine'] for q in v]):.3f}" for k, v in table[name].items()))
    finally:
        assistant_rules.SWITCHES.clear()
        assistant_rules.SWITCHES.update(default)
    folds = []
    for chat in chats:
        train = [c["id"] for c in chats if c["id"] != chat["id"]]
        chosen = max(table, key=lambda v: (_mean([q["engine"] for t in train for q in table[v][t]]), v == _label(default)))
        held = table[chosen][chat["id"]]
        folds.append({"test": chat["id"], "chosen": chosen, "recall": round(_mean([q["engine"] for q in held]), 4),
                      "default_recall": round(_mean([q["engine"] for q in table[_label(default)][chat["id"]]]), 4),
                      "questions": held})
    pooled = [q for f in folds for q in f["questions"]]
    present = [t for t in TYPES if any(q["type"] == t for per in table.values() for qs in per.values() for q in qs)]
    by_type = {v: {t: round(_mean([q["engine"] for qs in per.values() for q in qs if q["type"] == t]), 4) for t in present}
               for v, per in table.items()}
    return {"variants": {v: {c: round(_mean([q["engine"] for q in qs]), 4) for c, qs in per.items()} for v, per in table.items()},
            "variants_by_type": by_type,
            "variants_all": {v: round(_mean([q["engine"] for qs in per.values() for q in qs]), 4) for v, per in table.items()},
            "folds": [{k: v for k, v in f.items() if k != "questions"} for f in folds],
            "loo_pooled": round(_mean([q["engine"] for q in pooled]), 4),
            "loo_by_type": {t: round(_mean([q["engine"] for q in pooled if q["type"] == t]), 4) for t in TYPES
                            if any(q["type"] == t for q in pooled)},
            "default": _label(default)}


def print_report(report: dict[str, Any], budget: int) -> None:
    table = Table(title=f"evidence recall @{budget} messages")
    table.add_column("questions")
    for name in report["summary"]:
        table.add_column(f"{name} engine", justify="right")
        table.add_column(f"{name} bm25", justify="right")
    for qtype in ("all", *TYPES):
        cells = []
        for summary in report["summary"].values():
            s = summary if qtype == "all" else summary["by_type"].get(qtype)
            cells += [f"{s['engine']:.3f} ({s['n']})", f"{s['bm25']:.3f}"] if s else ["-", "-"]
        table.add_row(qtype, *cells)
    console.print(table)
    for name, summary in report["summary"].items():
        for spec, values in summary.get("whatif", {}).items():
            console.print(f"what-if {spec} [{name}]: " + ", ".join(f"{k} {v:.3f}" for k, v in values.items()), markup=False)
    chats = Table(title="per chat")
    for col in ("chat", "msgs", "nodes", "entity nodes", "citations", "to assistant msgs", "gold cited", "commit s", "index s"):
        chats.add_column(col)
    for chat in report["chats"]:
        gold_cited = _mean([r["gold_cited"] for r in chat["questions"]])
        chats.add_row(chat["chat"], str(chat["messages"]), str(chat["nodes"]), str(chat["entity_nodes"]),
                      str(chat["citations"]), str(chat["assistant_citations"]), f"{gold_cited:.3f}",
                      f"{chat['commit_s']:.1f}", f"{chat['index_s']:.1f}")
    console.print(chats)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=["en", "zh", "all"], default="all")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--top-k", type=int, default=40)
    parser.add_argument("--embedder", choices=["default", "hashing"], default="default",
                        help="default: the service's offline default (E5 where it loads)")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--loo", action="store_true", help="validate the rules' switches leave one chat out")
    parser.add_argument("--data", default="tech_chats",
                        help="data set prefix under benchmarks/data: tech_chats (dev) or tech_chats_fresh (held out)")
    parser.add_argument("--trace", action="store_true",
                        help="keep, per question, the collected ids and the first blocks (in --out-json)")
    parser.add_argument("--whatif", action="append", default=[], metavar="KNOB=VALUE[,KNOB=VALUE]",
                        help="diagnosis only: also search with these RetrieverConfig overrides "
                             "(e.g. max_df_ratio=none or vector_weight=1.0); repeatable")
    parser.add_argument("--no-pair-split", dest="pair_split", action="store_const", const=False, default=None,
                        help="what-if: search two-part questions whole "
                             "(knowhub.context.retrieval.pair_questions is on in the service)")
    parser.add_argument("--distractors", default=None, metavar="DATA",
                        help="with --one-user: the chats of this data set (e.g. tech_chats; several: "
                             "tech_chats,tech_chats_fresh) join each user's history without their questions "
                             "(a larger haystack for --data's questions)")
    parser.add_argument("--one-user", action="store_true",
                        help="each language's chats as one user's history (a larger haystack)")
    args = parser.parse_args(argv)
    langs = ["en", "zh"] if args.lang == "all" else [args.lang]
    if args.distractors and not args.one_user:
        parser.error("--distractors needs --one-user")

    def load(ls: list[str]) -> list[dict[str, Any]]:
        chats = load_chats(ls, args.data)
        for extra in (args.distractors or "").split(","):
            if extra.strip():
                chats += [{**c, "questions": []} for c in load_chats(ls, extra.strip())]
        return one_user(chats) if args.one_user else chats
    embedder = None
    if args.embedder == "hashing":
        from knowhub.providers.embedding import HashingEmbedder

        embedder = HashingEmbedder()
    if args.loo:
        with tempfile.TemporaryDirectory(prefix="tech-chat-loo-") as tmp:
            loo = run_loo(load(langs), Path(tmp), args.budget, args.top_k, embedder)
        table = Table(title=f"leave one chat out, recall @{args.budget} messages")
        for col in ("test chat", "chosen on the others", "held-out recall", "shipped default"):
            table.add_column(col)
        for fold in loo["folds"]:
            table.add_row(fold["test"], fold["chosen"], f"{fold['recall']:.3f}", f"{fold['default_recall']:.3f}")
        console.print(table)
        console.print(f"LOO pooled recall {loo['loo_pooled']:.3f}; by type {loo['loo_by_type']}")
        if args.out_json:
            args.out_json.write_text(json.dumps({**loo, "load_average": os.getloadavg()}, ensure_ascii=False, indent=1))
        return loo
    with tempfile.TemporaryDirectory(prefix="tech-chat-") as tmp:
        chats = [run_chat(chat, Path(tmp), args.budget, args.top_k, embedder, args.trace, args.whatif, args.pair_split)
                 for chat in load(langs)]
    report = {"budget": args.budget, "embedder": args.embedder, "data": args.data, "one_user": args.one_user,
              "distractors": args.distractors,
              "summary": summarize(chats), "chats": chats,
              "load_average": os.getloadavg()}
    print_report(report, args.budget)
    if args.out_json:
        args.out_json.write_text(json.dumps(report, ensure_ascii=False, indent=1))
    return report


if __name__ == "__main__":
    main()

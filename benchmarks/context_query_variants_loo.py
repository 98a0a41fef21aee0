"""LoCoMo: query-side variants that a replay of ranked lists cannot measure, searched on
stores built once, leave one conversation out (issue 19 §7, sixth session).

Why: a variant that changes what the search *asks* (the query text embedded or tokenized)
or a rule applied inside the search (session cohesion per question kind) changes the
candidates themselves, so ``context_replay_*.py`` cannot score it. This runner opens the
five dev stores that ``context_budget_loo.py --stores DIR`` built (a reopened store ranks as
the live one), wraps the retriever for each variant and scores recall@10 messages as the
runner does; the fold choice is :func:`context_budget_loo.loo_report`'s.

Variants:

* ``strip-dense`` / ``strip-lexical`` / ``strip-both``: a named speaker's name (and "'s")
  removed from the dense / lexical query (speaker focus already raises that person's
  memories, so the name only adds the turns that address them);
* ``first-person w``: for a question naming one speaker, a first-person form of it
  ("What activities does Ana do?" → "What activities I do") embedded too and added to the
  query vector with weight ``w`` (``only``: used alone);
* ``cohesion-list g``: session cohesion with gain ``g`` for list questions only (0: off),
  the default gain for the others;
* ``sentences``: the dense list ranked by each node's best *sentence* — E5 vectors of every
  sentence of the messages a node cites (nodes citing at most two), ``sent``: that cosine
  alone, ``max``: the larger of it and the node's own cosine, ``add``: the sentence list as a
  fourth ranker in the fusion at ``weight`` (``--sentences DIR`` caches the
  vectors: the clause that answers can be one of several in a long turn);
* ``speaker_search``: a per-speaker sub-search for a question naming one speaker — the
  dense list searched 5,000 deep and the lexical lists 2,000 deep, filtered to that
  speaker's nodes (``filter``; ``noaddr``: also without the turns that address the other
  person), or the speaker's deep dense hits merged into the usual dense list (``union``);
* ``gate: list``: the variant only for list questions ("What activities …").

Second hop (``--hops FILE``, seventh session): each question is searched once as asked, then
once more with a second query: the question plus the ``words`` most telling words
(tf · idf over the caller's index; no function words, no speaker names, none of the
question's) of the first ``docs`` blocks the first search returned — embedded and tokenized
(``both``), or only embedded (``dense``: the lexical side keeps the question). Both ranked
lists are written to FILE and fused offline (``hop_replay``): reciprocal ranks with the
second list at weight ``w``, the first block of the first list kept first, for every
question or only for questions a grammar gate picks (list questions, a named speaker).

    python benchmarks/context_budget_loo.py --settings '[{}]' --stores /tmp/stores --out-json F
    python benchmarks/context_query_variants_loo.py --stores /tmp/stores --out-json F2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from context_budget_loo import (
    CATEGORY_NAMES,
    build,
    context_of,
    finish_report,
    loo_report,
    questions,
    score,
)
from context_replay_loo import is_list_question, loo

import knowhub.context.service as service_module
from knowhub.context.core.query import TypedQuery
from knowhub.context.retrieval import l0_retriever
from knowhub.context.retrieval.session_cohesion import session_of
from knowhub.context.retrieval.speaker_focus import addresses_other
from knowhub.index.protocol import IndexHit
from knowhub.providers.embedding import embed_queries
from knowhub.text import tokenize
from knowhub.text.query_stopwords import stop_tokens

_AUX = r"(?:does|did|do|has|have|is|was|will|would|had|can)"


def strip_names(text: str, names: list[str]) -> str:
    for name in names:
        for form in {name, name.split()[0]}:
            text = re.sub(rf"\b{re.escape(form)}(?:'s|’s)?\b", "", text)
    return re.sub(r"\s+", " ", text).strip()


def first_person(text: str, names: list[str]) -> str | None:
    """The question from the named speaker's side, or None when it names not exactly one."""
    named = [form for n in names for form in (n, n.split()[0]) if re.search(rf"\b{re.escape(form)}\b", text)]
    if len({n for n in names if n in named or n.split()[0] in named}) != 1:
        return None
    name = re.escape(max(named, key=len))
    out = re.sub(rf"\b{name}(?:'s|’s)", "my", text)  # possessive first: "did Ben's sister" keeps "did"
    out = re.sub(rf"\b{_AUX}\s+{name}\b", "I", out)
    return re.sub(rf"\b{name}\b", "I", out).rstrip("?").strip()


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


class SentenceVectors:
    """E5 vectors of every sentence of every dev message ("Speaker: sentence"; an image
    caption as one more sentence), cached under ``folder``; nodes' cited messages per store."""

    def __init__(self, convs: list[dict[str, Any]], folder: Path) -> None:
        keys, texts = [], []
        for conv in convs:
            for session in conv["sessions"]:
                for turn in session["turns"]:
                    parts = [p.strip() for p in _SENTENCE.findall(turn["text"]) if len(p.split()) >= 2] or [turn["text"]]
                    if turn.get("blip_caption"):
                        parts.append(f"shared a photo: {turn['blip_caption']}")
                    for part in parts:
                        keys.append((conv["sample_id"], turn["dia_id"]))
                        texts.append(f"{turn['speaker']}: {part}")
        if (folder / "sentences.npy").exists():
            self.matrix = np.load(folder / "sentences.npy")
        else:
            from knowhub.providers.embedding import default_embedder
            self.matrix = np.asarray(default_embedder().embed_matrix(texts), dtype=np.float32)
            folder.mkdir(parents=True, exist_ok=True)
            np.save(folder / "sentences.npy", self.matrix)
        assert len(self.matrix) == len(keys), "sentence cache of another split"
        self.rows: dict[tuple[str, str], list[int]] = {}
        for i, key in enumerate(keys):
            self.rows.setdefault(key, []).append(i)
        self.nodes: dict[str, list[tuple[str, list[str]]]] = {}

    def node_refs(self, conv: str, index: Any) -> list[tuple[str, list[str]]]:
        if conv not in self.nodes:
            payloads = index.payloads(index.ids({"level": "0"}))
            self.nodes[conv] = [(i, [str(r) for r in (p.get("metadata") or {}).get("source_refs") or []])
                                for i, p in payloads.items() if p.get("context_type") == "memory"]
        return self.nodes[conv]


class Variants:
    """Patches of the retriever and of the service's cohesion step, switched per variant."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.conv = ""
        self.query = ""
        self.variant: dict[str, Any] = {}
        self.lexical_text: str | None = None  # a second hop's lexical query (None: the text searched)
        self.sentences: SentenceVectors | None = None
        self.extra: list[IndexHit] = []  # the sentence list of the search in progress (``add``)

    def gated(self) -> bool:
        return self.variant.get("gate") != "list" or is_list_question(self.query)

    def sentence_dense(self, retriever: Any, typed: TypedQuery, ctx: Any, filters: dict[str, Any],
                       pool: int) -> list[IndexHit]:
        """The dense list by each node's best sentence (``sent``) or the better of that and the
        node's own cosine (``max``)."""
        assert self.sentences is not None, "--sentences DIR is needed"
        vector = retriever.query_vector(typed)
        unit = vector / (np.linalg.norm(vector) or 1.0)
        hits = retriever.index.search(vector=vector, filters=retriever._index_filters(filters), top_k=0, vector_k=5000,
                                      partitions=l0_retriever.visible_partitions(ctx, list(l0_retriever.DEFAULT_CONTEXT_TYPES)))
        own = {h.id: h.vector_score for h in hits if h.vector_score is not None}
        scores: dict[str, float] = {}
        for doc, refs in self.sentences.node_refs(self.conv, retriever.index):
            rows = [r for ref in refs for r in self.sentences.rows.get((self.conv, ref), [])] if len(refs) <= 2 else []
            best = float((self.sentences.matrix[rows] @ unit).max()) if rows else None
            values = [x for x in (best, own.get(doc)) if x is not None]
            if values:
                scores[doc] = (best if best is not None else values[0]) if self.variant["sentences"] != "max" else max(values)
        top = sorted(scores, key=lambda d: -scores[d])[: min(pool, retriever.config.dense_pool)]
        return [IndexHit(id=d, vector_score=scores[d], vector_rank=i) for i, d in enumerate(top, start=1)]

    def speaker_lists(self, retriever: Any, rank: Any, typed: TypedQuery, ctx: Any, filters: dict[str, Any],
                      pool: int) -> tuple[list[IndexHit], list[IndexHit], list[IndexHit]] | None:
        """The per-speaker sub-search (module doc), or None when the question names not one speaker."""
        named = [n for n in self.names if re.search(rf"\b{re.escape(n.split()[0])}\b", typed.text)]
        if len(named) != 1:
            return None
        cfg, depth = retriever.config, retriever.config.dense_pool
        cfg.dense_pool = 5000
        try:
            dense, lexical, feedback = rank(retriever, typed, ctx, filters, 2000)
        finally:
            cfg.dense_pool = depth
        payloads = retriever.index.payloads({h.id for h in (*dense, *lexical, *feedback)})
        mode = self.variant["speaker_search"]

        def own(hit: IndexHit) -> bool:
            payload = payloads.get(hit.id) or {}
            if named[0] not in ((payload.get("metadata") or {}).get("speakers") or []):
                return False
            return mode != "noaddr" or not addresses_other(str(payload.get("text") or ""))
        if mode in ("filter", "noaddr"):
            return ([h for h in dense if own(h)][:depth], [h for h in lexical if own(h)][:pool],
                    [h for h in feedback if own(h)][:pool])
        merged: dict[str, IndexHit] = {}
        for hit in sorted([*dense[:depth], *[h for h in dense if own(h)][:depth]], key=lambda h: -(h.vector_score or 0.0)):
            merged.setdefault(hit.id, hit)
        union = [IndexHit(id=h.id, vector_score=h.vector_score, vector_rank=i) for i, h in enumerate(merged.values(), 1)]
        return union, lexical[:pool], feedback[:pool]

    @contextmanager
    def installed(self):
        retriever = l0_retriever.L0Retriever
        orig_vector, orig_tokens = retriever.query_vector, retriever._query_tokens
        orig_search, orig_cohere = service_module.ContextEngineService.search_memory, service_module.cohere_sessions
        orig_rank, orig_scores = retriever._rank, retriever._scores
        state = self

        def rank(self: Any, typed: TypedQuery, ctx: Any, filters: dict[str, Any], pool: int) -> Any:
            v = state.variant
            if "speaker_search" in v and state.gated():
                lists = state.speaker_lists(self, orig_rank, typed, ctx, filters, pool)
                if lists is not None:
                    return lists
            dense, lexical, feedback = orig_rank(self, typed, ctx, filters, pool)
            if "sentences" in v and state.gated():
                if v["sentences"] == "add":
                    state.extra = state.sentence_dense(self, typed, ctx, filters, pool)
                else:
                    dense = state.sentence_dense(self, typed, ctx, filters, pool)
            return dense, lexical, feedback

        def scores(self: Any, dense: Any, lexical: Any, feedback: Any = None) -> Any:
            out, info = orig_scores(self, dense, lexical, feedback)
            extra, state.extra = state.extra, []
            if extra:  # the sentence list as a fourth ranker, weight ``weight`` (rrf, as the others)
                cfg = self.config
                best = (cfg.vector_weight + cfg.lexical_weight + (cfg.prf_weight if feedback else 0.0)) / (cfg.rrf_k + 1.0)
                payloads = self.index.payloads([h.id for h in extra])
                for rank_no, hit in enumerate((h for h in extra if h.id in payloads), start=1):
                    uri = str(payloads[hit.id]["uri"])
                    out[uri] = out.get(uri, 0.0) + float(state.variant.get("weight", 0.5)) / (cfg.rrf_k + rank_no) / best
                    info.setdefault(uri, {"payload": payloads[hit.id]})
            return out, info

        def query_vector(self: Any, typed: TypedQuery) -> np.ndarray:
            v = state.variant
            if v.get("strip") in ("dense", "both"):
                typed = TypedQuery(text=strip_names(typed.text, state.names) or typed.text, hints=typed.hints)
            vector = orig_vector(self, typed)
            extra = first_person(typed.text, state.names) if "first_person" in v else None
            if extra is None:
                return vector
            other = embed_queries(self.embedder, [extra])[0].astype(np.float32)
            return other if v["first_person"] == "only" else vector + float(v["first_person"]) * other

        def query_tokens(self: Any, text: str, partitions: list[str]) -> list[str]:
            if state.lexical_text is not None:
                text = state.lexical_text
            if state.variant.get("strip") in ("lexical", "both"):
                text = strip_names(text, state.names) or text
            return orig_tokens(self, text, partitions)

        def search_memory(self: Any, ctx: Any, query: str, *args: Any, **kwargs: Any) -> Any:
            state.query = query
            return orig_search(self, ctx, query, *args, **kwargs)

        def cohere(blocks: Any, graph: Any = None, **kwargs: Any) -> Any:
            if "cohesion_list" in state.variant and is_list_question(state.query):
                kwargs["gain"] = float(state.variant["cohesion_list"])
            return orig_cohere(blocks, graph, **kwargs)

        retriever.query_vector, retriever._query_tokens, retriever._rank = query_vector, query_tokens, rank
        retriever._scores = scores
        service_module.ContextEngineService.search_memory, service_module.cohere_sessions = search_memory, cohere
        try:
            yield self
        finally:
            retriever.query_vector, retriever._query_tokens, retriever._rank = orig_vector, orig_tokens, orig_rank
            retriever._scores = orig_scores
            service_module.ContextEngineService.search_memory = orig_search
            service_module.cohere_sessions = orig_cohere


VARIANTS: list[dict[str, Any]] = [
    {}, {"strip": "dense"}, {"strip": "lexical"}, {"strip": "both"},
    {"first_person": 0.5}, {"first_person": 1.0}, {"first_person": "only"},
    {"cohesion_list": 0.0}, {"cohesion_list": 0.04}, {"cohesion_list": 0.16},
]


_WORD = re.compile(r"[^\W_][\w'’\-]*")
#: second-hop configurations: blocks read, words added, where the words go
HOPS: list[dict[str, Any]] = [{"docs": d, "words": w, "mode": m} for m in ("both", "dense") for d, w in ((3, 5), (5, 10))]


def hop_words(svc: Any, ctx: Any, question: str, blocks: list[Any], docs: int, words: int,
              speakers: list[str]) -> list[str]:
    """The ``words`` most telling words (tf · idf over the caller's lexical documents) of the
    first ``docs`` blocks, without function words, speaker names or the question's own words."""
    skip = set(tokenize(question)) | {t for name in speakers for t in tokenize(name)}
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for block in blocks[:docs]:
        text = str(block.abstract or "")
        stop = stop_tokens(text)
        for word in _WORD.findall(text):
            toks = tokenize(word)
            if len(toks) != 1 or toks[0] in stop or toks[0] in skip or len(toks[0]) < 3 or toks[0].isdigit():
                continue
            counts[toks[0]] += 1
            surface.setdefault(toks[0], word)
    if not counts:
        return []
    partitions = l0_retriever.visible_partitions(ctx, list(l0_retriever.DEFAULT_CONTEXT_TYPES))
    dfs, total = svc.retriever.index.doc_freqs(list(counts), partitions=partitions)
    ranked = sorted(((tf * math.log(1 + total / dfs[t]), t) for t, tf in counts.items() if dfs.get(t)),
                    key=lambda x: (-x[0], x[1]))
    return [surface[t] for _, t in ranked[:words]]


def _listed(svc: Any, blocks: list[Any]) -> list[dict[str, Any]]:
    return [{"refs": [str(r) for r in b.metadata.get("source_refs") or []], "score": b.score,
             "sess": session_of(b.uri, b.metadata, svc.graph), "redundant": bool(b.metadata.get("redundant"))}
            for b in blocks]


def dump_hops(stores: dict[str, Any], convs: list[dict[str, Any]], variants: Variants, out: Path) -> None:
    """Per question the first search's 40 blocks and each :data:`HOPS` second search's (see
    module doc); the second hops' CPU time is recorded per question."""
    rows: list[dict[str, Any]] = []
    for conv in convs:
        svc, ctx = stores[conv["sample_id"]], context_of(conv["sample_id"])
        speakers = list(conv["speakers"])
        for item in questions(conv):
            question = item["question"]
            first = svc.search_memory(ctx, question, top_k=40).blocks
            row = {"conv": conv["sample_id"], "cat": item["category"], "ev": item["evidence"], "q": question,
                   "lists": {"base": _listed(svc, first)}, "cpu_ms": {}}
            for hop in HOPS:
                name = f"hop docs={hop['docs']} words={hop['words']} {hop['mode']}"
                cpu = time.process_time()
                extra = hop_words(svc, ctx, question, first, hop["docs"], hop["words"], speakers)
                if extra:
                    variants.lexical_text = question if hop["mode"] == "dense" else None
                    blocks = svc.search_memory(ctx, f"{question} {' '.join(extra)}", top_k=40).blocks
                    variants.lexical_text = None
                else:
                    blocks = first
                row["cpu_ms"][name] = round(1000 * (time.process_time() - cpu), 2)
                row["lists"][name] = _listed(svc, blocks)
            rows.append(row)
        print("hops", conv["sample_id"], flush=True)
    out.write_text(json.dumps(rows), encoding="utf-8")


def _recall(gold: list[str], lists: list[list[str]], budget: int = 10) -> float:
    got: dict[str, None] = {}
    for refs in lists:
        for ref in refs:
            if len(got) < budget:
                got.setdefault(ref, None)
    return len(set(gold) & set(got)) / len(set(gold))


def fuse_hop(first: list[dict[str, Any]], second: list[dict[str, Any]], weight: float) -> list[list[str]]:
    """Reciprocal-rank fusion of the two block lists (by cited messages), the first list's
    first block kept first."""
    score: dict[tuple[str, ...], float] = {}
    for w, blocks in ((1.0, first), (weight, second)):
        for rank, block in enumerate(blocks):
            key = tuple(block["refs"])
            score[key] = score.get(key, 0.0) + w / (60 + rank)
    head = tuple(first[0]["refs"]) if first else None
    rest = sorted((k for k in score if k != head), key=lambda k: -score[k])
    return [list(head)] * (head is not None) + [list(k) for k in rest]


GATES = {"all": lambda q, names: True, "list": lambda q, names: is_list_question(q),
         "named": lambda q, names: sum(bool(re.search(rf"\b{re.escape(n.split()[0])}\b", q)) for n in names) == 1}


def hop_replay(rows: list[dict[str, Any]], convs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each hop list fused at each weight under each gate, scored as the runner scores;
    chosen leave one conversation out per hop family; where the first search's missing gold went."""
    speakers = {c["sample_id"]: list(c["speakers"]) for c in convs}
    hops = [n for n in rows[0]["lists"] if n != "base"]
    results: list[tuple[str, dict[str, list[tuple[int, float]]]]] = []

    def run(name: str, pick: Any) -> None:
        per: dict[str, list[tuple[int, float]]] = {}
        for row in rows:
            per.setdefault(row["conv"], []).append((row["cat"], _recall(row["ev"], pick(row))))
        results.append((name, per))

    run("base", lambda row: [b["refs"] for b in row["lists"]["base"]])
    for hop in hops:
        for gate, test in GATES.items():
            for w in (0.25, 0.5, 1.0):
                run(f"{hop} gate={gate} w={w}", lambda row, hop=hop, test=test, w=w:
                    fuse_hop(row["lists"]["base"], row["lists"][hop], w) if test(row["q"], speakers[row["conv"]])
                    else [b["refs"] for b in row["lists"]["base"]])
    report: dict[str, Any] = {"variants": {}}
    for name, per in results:
        flat = [x for v in per.values() for x in v]
        report["variants"][name] = {**{c: round(sum(r for _, r in v) / len(v), 4) for c, v in sorted(per.items())},
                                    "all": round(sum(r for _, r in flat) / len(flat), 4),
                                    **{CATEGORY_NAMES[k]: round(sum(r for c, r in flat if c == k) /
                                                               max(1, sum(c == k for c, _ in flat)), 4)
                                       for k in CATEGORY_NAMES}}
    report["loo"] = {hop: loo(results, hop) for hop in hops}
    report["loo"]["every hop"] = loo(results, "hop ")
    where: dict[str, Any] = {}
    for hop in hops:
        absent = enters40 = enters10 = 0
        by_cat: Counter[str] = Counter()
        for row in rows:
            base = [b["refs"] for b in row["lists"]["base"]]
            seen = {r for refs in base for r in refs}
            fused10: dict[str, None] = {}
            for refs in fuse_hop(row["lists"]["base"], row["lists"][hop], 1.0):
                for ref in refs:
                    if len(fused10) < 10:
                        fused10.setdefault(ref, None)
            hop_seen = {r for b in row["lists"][hop] for r in b["refs"]}
            for gold in set(row["ev"]) - seen:
                absent += 1
                enters40 += gold in hop_seen
                enters10 += gold in fused10
                by_cat[CATEGORY_NAMES[row["cat"]]] += gold in hop_seen
        cpu = [row["cpu_ms"][hop] for row in rows]
        where[hop] = {"absent_from_first_40": absent, "in_hop_40": enters40, "in_fused_top10_w1": enters10,
                      "in_hop_40_by_category": dict(by_cat), "cpu_ms_mean": round(sum(cpu) / len(cpu), 1),
                      "cpu_ms_p95": round(sorted(cpu)[int(0.95 * (len(cpu) - 1))], 1)}
    report["absent_gold"] = where
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--stores", type=Path, required=True, help="context_budget_loo.py --stores DIR (built there)")
    parser.add_argument("--hops", type=Path, default=None,
                        help="write the first and second-hop lists here (reused when it exists) and replay their fusion")
    parser.add_argument("--variants", default=None, help="JSON list of variants (default: VARIANTS; {} first)")
    parser.add_argument("--sentences", type=Path, default=None, help="folder caching the sentence vectors")
    parser.add_argument("--data", type=Path, default=None,
                        help="a conversation file in LoCoMo's format instead of <bench-dir>/locomo-dev.json")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--per-question", type=Path, default=None,
                        help="write each setting's per-question (category, recall by budget) here")
    args = parser.parse_args(argv)
    convs = load_locomo(args.data or args.bench_dir / LOCOMO_FILE)
    if args.hops:
        load, started, cpu = [round(x, 2) for x in os.getloadavg()], time.perf_counter(), time.process_time()
        if not args.hops.exists():
            stores = {c["sample_id"]: build(c, args.stores / c["sample_id"], reuse=True) for c in convs}
            variants = Variants()
            with variants.installed():
                dump_hops(stores, convs, variants, args.hops)
            for svc in stores.values():
                svc.close()
        report = hop_replay(json.loads(args.hops.read_text(encoding="utf-8")), convs)
        for name, row in report["variants"].items():
            print(f"{name:44s} " + " ".join(f"{k}={v:.4f}" for k, v in row.items()))
        for fam, res in report["loo"].items():
            print(f"LOO {fam:30s} mean {res['loo_mean']:.4f} pooled {res['loo_pooled']:.4f} "
                  + ", ".join(f"{cid}: {f['chosen']} {f['recall']:.4f}" for cid, f in res["folds"].items()))
        print(json.dumps(report["absent_gold"], indent=1))
        return finish_report(report, load, started, cpu, args.out_json)
    stores = {c["sample_id"]: build(c, args.stores / c["sample_id"], reuse=True) for c in convs}
    chosen: list[dict[str, Any]] = json.loads(args.variants) if args.variants else VARIANTS
    names = [json.dumps(v, sort_keys=True) for v in chosen]
    per: dict[str, dict[str, Any]] = {n: {} for n in names}
    variants = Variants()
    if any("sentences" in v for v in chosen):
        variants.sentences = SentenceVectors(convs, args.sentences or Path("/tmp/locomo-sentences"))
    load, started, cpu = [round(x, 2) for x in os.getloadavg()], time.perf_counter(), time.process_time()
    with variants.installed():
        for name, variant in zip(names, chosen, strict=True):
            variants.variant = variant
            for conv in convs:
                variants.names, variants.conv = list(conv["speakers"]), conv["sample_id"]
                per[name][conv["sample_id"]] = score(stores[conv["sample_id"]], conv, [10, 25])
            print(name, round(sum(r[10] for c in per[name].values() for _, r in c) /
                              sum(len(c) for c in per[name].values()), 4), flush=True)
    for svc in stores.values():
        svc.close()
    if args.per_question:
        args.per_question.write_text(json.dumps(per), encoding="utf-8")
    return finish_report(loo_report(per, [10, 25], names), load, started, cpu, args.out_json)


if __name__ == "__main__":
    main()

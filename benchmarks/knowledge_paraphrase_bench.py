"""Paraphrase recall of knowledge search: queries that share no word with what they should find.

Data: ``benchmarks/data/knowledge_paraphrase.json`` (issue 19 §4): hand-written bilingual
knowledge items, queries that share no word with their relevant items (English: no shared
analyzed term; Chinese: no shared word bigram; checked by a test), and queries nothing in
the set answers. Queries alternate dev / test (``split``).

Each item is saved through ``KnowledgeHub.save`` (dedup off: the items are distinct) and
each query is asked through ``KnowledgeHub.search`` (top 5, the default offline LocalAgent),
with the embedder chosen on the command line. Reported per split:

* ``success@1`` / ``success@5`` — share of queries with a relevant item in the top 1 / 5;
* ``no hit`` — share of answerable queries that got nothing back;
* ``false hit`` — share of the unanswerable queries that got anything back;

for the engine, for BM25 alone (the index's lexical stage, top 5) and for the embedder's
cosine alone (top 5, no threshold: the ceiling of what a floor can let through).

``--choose`` lists the floors (``RelevanceModel.min_cosine_alone``) that do best on the dev
split (:func:`choose_floor`); the engine's constant is what the search rows use. Rows
``without_floor`` re-rank the same candidates as before the floor (``min_cosine`` alone).

    python benchmarks/knowledge_paraphrase_bench.py                 # default E5 embedder
    python benchmarks/knowledge_paraphrase_bench.py --embedder hashing --choose
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.ranking import Candidate, RelevanceModel
from knowhub.knowledge.search import lexical_tokens
from knowhub.providers.embedding import HashingEmbedder, embed_queries
from knowhub.scope import Principal

DATA = Path(__file__).resolve().parent / "data" / "knowledge_paraphrase.json"
TOP_K = 5
FLOOR_GRID = [round(0.10 + 0.02 * i, 2) for i in range(11)]  # 0.10 .. 0.30


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def build_embedder(name: str) -> Any:
    if name == "hashing":
        return HashingEmbedder()
    from knowhub.providers.multilingual import MultilingualE5Embedder

    return MultilingualE5Embedder()


def _share(rows: Sequence[bool]) -> float:
    return round(sum(rows) / len(rows), 3) if rows else 0.0


def summarize(ranked: dict[str, list[str]], data: dict[str, Any], split: str) -> dict[str, Any]:
    """success@1, success@5, no-hit and false-hit shares of one split."""
    queries = [q for q in data["queries"] if q["split"] == split]
    empty = [q for q in data["no_answer"] if q["split"] == split]
    return {
        "queries": len(queries),
        "success@1": _share([bool(set(ranked[q["id"]][:1]) & set(q["relevant"])) for q in queries]),
        "success@5": _share([bool(set(ranked[q["id"]][:TOP_K]) & set(q["relevant"])) for q in queries]),
        "no_hit": _share([not ranked[q["id"]] for q in queries]),
        "unanswerable": len(empty),
        "false_hit": _share([bool(ranked[q["id"]]) for q in empty]),
    }


def select_ids(model: RelevanceModel, candidates: Sequence[Candidate]) -> list[str]:
    return [kid for kid, _score in model.select(candidates)][:TOP_K]


def choose_floor(cands: dict[str, list[Candidate]], data: dict[str, Any], base: RelevanceModel) -> list[float]:
    """The floors with the best dev success@5, then the fewest answerable dev queries left
    with nothing, then the fewest dev false hits (all of them when several tie)."""
    keyed = []
    for floor in FLOOR_GRID:
        model = dataclasses.replace(base, min_cosine_alone=floor)
        got = summarize({qid: select_ids(model, c) for qid, c in cands.items()}, data, "dev")
        keyed.append(((got["success@5"], -got["no_hit"], -got["false_hit"]), floor))
    best = max(key for key, _floor in keyed)
    return [floor for key, floor in keyed if key == best]


def run(embedder_name: str, choose: bool) -> dict[str, Any]:
    data = load()
    embedder = build_embedder(embedder_name)
    alice = Principal.of("user:bench-paraphrase")
    asked = [*data["queries"], *data["no_answer"]]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kh-paraphrase-") as tmp, KnowledgeHub(
        Path(tmp) / "kh", embedder=embedder
    ) as hub:
        by_id: dict[str, str] = {}
        for item in data["items"]:
            body = {k: item[k] for k in ("task", "content", "types")}
            saved = hub.save(alice, {**body, "dedup": False})
            by_id[saved.id] = item["id"]
        engine, bm25, cosine, cands = {}, {}, {}, {}
        vectors = np.asarray(embed_queries(embedder, [q["query"] for q in asked]))
        for q, vec in zip(asked, vectors, strict=True):
            engine[q["id"]] = [by_id[h.knowledge.id] for h in hub.search(alice, q["query"], top_k=TOP_K)]
            with hub._indexes.lock:
                hits = hub._indexes.index.search(
                    tokens=lexical_tokens(q["query"]), vector=vec, top_k=TOP_K, vector_k=len(by_id),
                )
            lexical = sorted((h for h in hits if h.lexical_score), key=lambda h: -(h.lexical_score or 0))
            bm25[q["id"]] = [by_id[h.id] for h in lexical][:TOP_K]
            nearest = sorted(hits, key=lambda h: -(h.vector_score or 0.0))
            cosine[q["id"]] = [by_id[h.id] for h in nearest][:TOP_K]
            found = hub._indexes.candidates(q["query"], alice, types=None, min_score=3, pool=200)
            cands[q["id"]] = [dataclasses.replace(c, id=by_id[c.id]) for c in found]
        model = hub._indexes.model
    report: dict[str, Any] = {
        "embedder": embedder_name,
        "items": len(data["items"]),
        "min_cosine": round(model.min_cosine, 3),
        "min_cosine_alone": getattr(model, "min_cosine_alone", None),
    }
    if hasattr(model, "min_cosine_alone"):  # absent on an engine from before the floor
        plain = dataclasses.replace(model, min_cosine_alone=None)
        report["without_floor"] = {s: summarize({k: select_ids(plain, c) for k, c in cands.items()}, data, s)
                                   for s in ("dev", "test")}
    for name, ranked in (("engine", engine), ("bm25", bm25), ("cosine_top5", cosine)):
        report[name] = {s: summarize(ranked, data, s) for s in ("dev", "test")}
    if choose:
        report["chosen_on_dev"] = choose_floor(cands, data, model)
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=["hashing", "e5"], default="e5")
    parser.add_argument("--choose", action="store_true", help="re-derive the floor on dev")
    parser.add_argument("--out-json", type=Path)
    args = parser.parse_args(argv)
    report = run(args.embedder, args.choose)
    print(f"{'ranking':<14} {'split':<5} {'n':>3} {'success@1':>9} {'success@5':>9} {'no hit':>7} {'false hit':>9}")
    for name in ("without_floor", "engine", "bm25", "cosine_top5"):
        for split, got in report.get(name, {}).items():
            print(f"{name:<14} {split:<5} {got['queries']:>3} {got['success@1']:>9} {got['success@5']:>9} "
                  f"{got['no_hit']:>7} {got['false_hit']:>6} of {got['unanswerable']}")
    print(f"embedder {report['embedder']}, {report['items']} items, min_cosine {report['min_cosine']}, "
          f"min_cosine_alone {report['min_cosine_alone']}, {report['seconds']} s")
    if "chosen_on_dev" in report:
        print(f"best floors on dev: {report['chosen_on_dev']}")
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

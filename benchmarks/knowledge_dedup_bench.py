"""Save-time dedup: false-merge and missed-merge rates on labelled bilingual pairs.

``benchmarks/data/knowledge_dedup_pairs.jsonl`` holds pairs of knowledge items written for
this purpose (general technical knowledge, English and Chinese): true duplicates
(formatting, paraphrase, cross-language, small additions, reorderings) and related but
different items (another tool, another fix, another version or value, the opposite
advice). Each pair is judged as a save would judge it
(:func:`knowhub.knowledge.dedup.near_duplicate` on the embedder's rescaled cosine of the
texts the index embeds, and lexical similarity).

The thresholds are chosen on the dev half (even pair numbers): the pair of thresholds with
no false merge there that merges the most duplicates, ties to the stricter one. The test
half (odd numbers) reports the false-merge rate (different items merged / different
pairs) and the missed-merge rate (duplicates kept apart / duplicate pairs) at the chosen
thresholds, at the engine's constants (``SAVE_RELATEDNESS``, ``SAVE_LEXICAL``) and, for
contrast, at slim's looser ones (slim merges only after a reviewed plan).

    python benchmarks/knowledge_dedup_bench.py --embedder hashing
    python benchmarks/knowledge_dedup_bench.py --embedder e5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.knowledge.dedup import SAVE_LEXICAL, SAVE_RELATEDNESS, dedup_text, near_duplicate
from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.search import embed_text
from knowhub.knowledge.slim import COSINE_THRESHOLD, LEXICAL_THRESHOLD
from knowhub.providers.embedding import HashingEmbedder, relatedness

DATA = Path(__file__).resolve().parent / "data" / "knowledge_dedup_pairs.jsonl"
RELATED_GRID = [round(0.80 + 0.01 * i, 2) for i in range(21)] + [1.01]  # 1.01: off
LEXICAL_GRID = [round(0.50 + 0.05 * i, 2) for i in range(10)] + [1.01]


def load_pairs(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _item(side: dict[str, str]) -> Knowledge:
    return Knowledge(id="x", task=side["task"], content=side["content"], types=["tool"], owner="u",
                     scopes=["u"])


def signals(pairs: list[dict[str, Any]], embedder: Any) -> list[tuple[float, str, str]]:
    """(relatedness, text a, text b) per pair, embedded as the index embeds items."""
    texts = [embed_text(_item(p[side])) for p in pairs for side in ("a", "b")]
    matrix = np.asarray(embedder.embed_matrix(texts), dtype=np.float64)
    out = []
    for i, p in enumerate(pairs):
        cosine = float(matrix[2 * i] @ matrix[2 * i + 1])
        related = float(relatedness(embedder, np.array([cosine]))[0])
        out.append((related, dedup_text(**p["a"]), dedup_text(**p["b"])))
    return out


def rates(rows: list[tuple[bool, float, str, str]], min_related: float, min_lexical: float) -> dict[str, Any]:
    fm = mm = dup = diff = 0
    for label, related, a, b in rows:
        merged = near_duplicate(related, a, b, min_related=min_related, min_lexical=min_lexical) is not None
        if label:
            dup += 1
            mm += not merged
        else:
            diff += 1
            fm += merged
    return {"false_merge": fm, "different": diff, "missed_merge": mm, "duplicates": dup,
            "false_merge_rate": round(fm / diff, 3) if diff else 0.0,
            "missed_merge_rate": round(mm / dup, 3) if dup else 0.0}


def choose(rows: list[tuple[bool, float, str, str]]) -> tuple[float, float]:
    """No false merge on ``rows``, fewest missed merges, then the strictest thresholds."""
    best: tuple[Any, ...] | None = None
    for r in RELATED_GRID:
        for lex in LEXICAL_GRID:
            got = rates(rows, r, lex)
            key = (got["false_merge"], got["missed_merge"], -r, -lex)
            if best is None or key < best[0]:
                best = (key, r, lex)
    assert best is not None
    return best[1], best[2]


def build_embedder(name: str) -> Any:
    if name == "hashing":
        return HashingEmbedder()
    from knowhub.providers.multilingual import MultilingualE5Embedder

    return MultilingualE5Embedder()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=["hashing", "e5"], default="hashing")
    parser.add_argument("--out-json", type=Path)
    args = parser.parse_args(argv)
    pairs = load_pairs()
    started = time.perf_counter()
    embedder = build_embedder(args.embedder)
    sig = signals(pairs, embedder)
    rows = [(bool(p["duplicate"]), *s) for p, s in zip(pairs, sig, strict=True)]
    dev = [r for i, r in enumerate(rows) if i % 2 == 0]
    test = [r for i, r in enumerate(rows) if i % 2 == 1]
    r, lex = choose(dev)
    report = {
        "embedder": args.embedder,
        "pairs": len(rows),
        "chosen_on_dev": {"min_related": r, "min_lexical": lex, "dev": rates(dev, r, lex),
                          "test": rates(test, r, lex)},
        "engine_constants": {"min_related": SAVE_RELATEDNESS, "min_lexical": SAVE_LEXICAL,
                             "dev": rates(dev, SAVE_RELATEDNESS, SAVE_LEXICAL),
                             "test": rates(test, SAVE_RELATEDNESS, SAVE_LEXICAL)},
        "slim_thresholds": {"min_related": COSINE_THRESHOLD, "min_lexical": LEXICAL_THRESHOLD,
                            "dev": rates(dev, COSINE_THRESHOLD, LEXICAL_THRESHOLD),
                            "test": rates(test, COSINE_THRESHOLD, LEXICAL_THRESHOLD)},
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"{'thresholds':<34} {'half':<5} {'false merge':>14} {'missed merge':>14}")
    for name in ("chosen_on_dev", "engine_constants", "slim_thresholds"):
        part = report[name]
        label = f"{name} rel>={part['min_related']} lex>={part['min_lexical']}"
        for half in ("dev", "test"):
            got = part[half]
            print(f"{label:<34} {half:<5} {got['false_merge']:>3}/{got['different']:<3} {got['false_merge_rate']:>6} "
                  f"{got['missed_merge']:>3}/{got['duplicates']:<3} {got['missed_merge_rate']:>6}")
    print(f"embedder {args.embedder}, {len(rows)} pairs, {report['seconds']} s")
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
thresholds, at the engine's constants (``SAVE_RELATEDNESS``, ``SAVE_CONTENT_RELATEDNESS``,
``SAVE_LEXICAL``) and, for contrast, at slim's looser ones (slim merges only after a
reviewed plan, and does not look at contents or identifiers) and at the save's thresholds
before issue 19 §4's second round (whole-text relatedness 0.94 alone).

A save's judgement needs the contents' relatedness too: each side's content is embedded
alone as well. The grid evaluates ``near_duplicate`` itself thousands of times, so its pure
text helpers are memoized here (same answers, computed once per text).

    python benchmarks/knowledge_dedup_bench.py --embedder hashing
    python benchmarks/knowledge_dedup_bench.py --embedder e5
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from knowhub.knowledge import dedup
from knowhub.knowledge.dedup import (
    SAVE_CONTENT_RELATEDNESS,
    SAVE_LEXICAL,
    SAVE_RELATEDNESS,
    content_text,
    dedup_text,
    near_duplicate,
)
from knowhub.knowledge.models import Knowledge
from knowhub.knowledge.search import embed_text
from knowhub.knowledge.slim import COSINE_THRESHOLD, LEXICAL_THRESHOLD
from knowhub.providers.embedding import HashingEmbedder, relatedness

DATA = Path(__file__).resolve().parent / "data" / "knowledge_dedup_pairs.jsonl"
RELATED_GRID = [round(0.80 + 0.01 * i, 2) for i in range(20)] + [1.01]  # 1.01: off
CONTENT_GRID = [round(0.80 + 0.01 * i, 2) for i in range(20)]
LEXICAL_GRID = [0.8, 0.85, 0.9, 0.95, 1.01]
#: Thresholds of the save before the content and identifier checks (for contrast).
BEFORE = (0.94, None, 0.9)


def load_pairs(path: Path = DATA) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _item(side: dict[str, str]) -> Knowledge:
    return Knowledge(id="x", task=side["task"], content=side["content"], types=["tool"], owner="u",
                     scopes=["u"])


def signals(pairs: list[dict[str, Any]], embedder: Any) -> list[tuple[float, float, str, str]]:
    """(relatedness, content relatedness, text a, text b) per pair, embedded as the index
    embeds items and as a save embeds contents."""
    texts = [embed_text(_item(p[side])) for p in pairs for side in ("a", "b")]
    contents = [content_text(p[side]["content"]) for p in pairs for side in ("a", "b")]
    matrix = np.asarray(embedder.embed_matrix(texts), dtype=np.float64)
    content_matrix = np.asarray(embedder.embed_matrix(contents), dtype=np.float64)
    out = []
    for i, p in enumerate(pairs):
        cosines = np.array([matrix[2 * i] @ matrix[2 * i + 1], content_matrix[2 * i] @ content_matrix[2 * i + 1]])
        related, content = (float(x) for x in relatedness(embedder, cosines))
        out.append((related, content, dedup_text(**p["a"]), dedup_text(**p["b"])))
    return out


def _memoize_text_helpers() -> None:
    for name in ("normalize", "similarity", "_numbers", "identifiers"):
        setattr(dedup, name, functools.lru_cache(maxsize=None)(getattr(dedup, name)))


def rates(rows: list[tuple[bool, float, float, str, str]], min_related: float, min_lexical: float,
          min_content: float | None = SAVE_CONTENT_RELATEDNESS) -> dict[str, Any]:
    fm = mm = dup = diff = 0
    for label, related, content, a, b in rows:
        merged = near_duplicate(related, a, b, min_related=min_related, min_lexical=min_lexical,
                                content_related=content, min_content=min_content) is not None
        if label:
            dup += 1
            mm += not merged
        else:
            diff += 1
            fm += merged
    return {"false_merge": fm, "different": diff, "missed_merge": mm, "duplicates": dup,
            "false_merge_rate": round(fm / diff, 3) if diff else 0.0,
            "missed_merge_rate": round(mm / dup, 3) if dup else 0.0}


def choose(rows: list[tuple[bool, float, float, str, str]]) -> tuple[float, float, float]:
    """No false merge on ``rows``, fewest missed merges, then the strictest thresholds:
    (min_related, min_content, min_lexical)."""
    best: tuple[Any, ...] | None = None
    for r in RELATED_GRID:
        for c in CONTENT_GRID:
            for lex in LEXICAL_GRID:
                got = rates(rows, r, lex, c)
                key = (got["false_merge"], got["missed_merge"], -r, -c, -lex)
                if best is None or key < best[0]:
                    best = (key, r, c, lex)
    assert best is not None
    return best[1], best[2], best[3]


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
    _memoize_text_helpers()
    started = time.perf_counter()
    embedder = build_embedder(args.embedder)
    sig = signals(pairs, embedder)
    rows = [(bool(p["duplicate"]), *s) for p, s in zip(pairs, sig, strict=True)]
    dev = [r for i, r in enumerate(rows) if i % 2 == 0]
    test = [r for i, r in enumerate(rows) if i % 2 == 1]
    r, c, lex = choose(dev)

    def part(related: float, content: float | None, lexical: float) -> dict[str, Any]:
        return {"min_related": related, "min_content": content, "min_lexical": lexical,
                "dev": rates(dev, related, lexical, content), "test": rates(test, related, lexical, content)}

    report = {
        "embedder": args.embedder,
        "pairs": len(rows),
        "chosen_on_dev": part(r, c, lex),
        "engine_constants": part(SAVE_RELATEDNESS, SAVE_CONTENT_RELATEDNESS, SAVE_LEXICAL),
        "save_before": part(*BEFORE),
        "slim_thresholds": part(COSINE_THRESHOLD, None, LEXICAL_THRESHOLD),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"{'thresholds':<44} {'half':<5} {'false merge':>14} {'missed merge':>14}")
    for name in ("chosen_on_dev", "engine_constants", "save_before", "slim_thresholds"):
        part_ = report[name]
        label = f"{name} rel>={part_['min_related']} con>={part_['min_content']} lex>={part_['min_lexical']}"
        for half in ("dev", "test"):
            got = part_[half]
            print(f"{label:<44} {half:<5} {got['false_merge']:>3}/{got['different']:<3} {got['false_merge_rate']:>6} "
                  f"{got['missed_merge']:>3}/{got['duplicates']:<3} {got['missed_merge_rate']:>6}")
    print(f"embedder {args.embedder}, {len(rows)} pairs, {report['seconds']} s")
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

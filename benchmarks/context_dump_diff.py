"""Where the gold of a LoCoMo-style run sits, and which questions moved between two runs.

Why: a change of the commit path (an extractor rule, a word list) moves recall@10 by a few
questions, and a pooled figure does not say which, nor why. The tenth session needed both
answers for issue 19 §7: the ninth session's entity hygiene cost one conversation 0.6
points and was never isolated, and multi-hop questions stay the weakest category. This
reads the ranked lists that ``context_budget_loo.py --dump`` writes (per question: the
conversation, category, gold ids and the 40 blocks with score, refs and session) and

* ``where``: per category, the gold messages collected in the first ``budget`` messages /
  first cited by a block ranked below them (among the 40) / cited by none of the 40; and for
  questions whose gold spans several sessions, whether a lost gold message's session is
  already among the collected messages (then the budget went to the wrong turns of a session
  found) or not (a session never reached);
* ``diff A B``: the questions whose recall differs between two dumps of the same
  conversations, with the gold's first block rank in each and the leading blocks.

    python benchmarks/context_dump_diff.py where D1 [D2 ...]
    python benchmarks/context_dump_diff.py diff A.json B.json [--conv conv-43]

Reads dumps only (no store, no embedder); never copies conversation text.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import context_bench as cb

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _session(ref: str) -> str:
    """LoCoMo ids are ``D<session>:<turn>``: the part before the colon names the session."""
    return ref.split(":", 1)[0]


def first_rank(question: dict[str, Any], ref: str) -> int | None:
    """Index of the first block citing ``ref``, or None when none of the blocks does."""
    return next((i for i, block in enumerate(question["blocks"]) if ref in block["refs"]), None)


def recall(question: dict[str, Any], budget: int) -> float:
    return cb.recall(question["ev"], cb.collect([b["refs"] for b in question["blocks"]], budget))


def where(dump: list[dict[str, Any]], budget: int = 10) -> dict[str, Counter[str]]:
    """Per category name: gold collected / ranked later / absent, and the multi-session split."""
    out: dict[str, Counter[str]] = {}
    for q in dump:
        stats = out.setdefault(CATEGORY_NAMES.get(q["cat"], str(q["cat"])), Counter())
        got = set(cb.collect([b["refs"] for b in q["blocks"]], budget))
        sessions_got = {_session(r) for r in got}
        spans = len({_session(g) for g in q["ev"]}) > 1
        stats["questions"] += 1
        stats["multi_session_questions"] += spans
        for gold in q["ev"]:
            stats["gold"] += 1
            if gold in got:
                stats["collected"] += 1
                continue
            stats["ranked_later" if first_rank(q, gold) is not None else "absent"] += 1
            if spans:
                stats["lost_session_found" if _session(gold) in sessions_got else "lost_session_missed"] += 1
    return out


def diff(a: list[dict[str, Any]], b: list[dict[str, Any]], budget: int = 10, conv: str | None = None,
         show: int = 12) -> list[dict[str, Any]]:
    """The questions (same order in both dumps) whose recall differs."""
    a = [q for q in a if conv is None or q["conv"] == conv]
    b = [q for q in b if conv is None or q["conv"] == conv]
    if [(q["conv"], q["ev"]) for q in a] != [(q["conv"], q["ev"]) for q in b]:
        raise ValueError("the dumps hold different questions")
    moved = []
    for n, (x, y) in enumerate(zip(a, b, strict=True)):
        ra, rb = recall(x, budget), recall(y, budget)
        if abs(ra - rb) > 1e-9:
            moved.append({"index": n, "conv": x["conv"], "category": CATEGORY_NAMES.get(x["cat"], str(x["cat"])),
                          "gold": x["ev"], "recall": [round(ra, 4), round(rb, 4)],
                          "gold_rank": [[first_rank(x, g) for g in x["ev"]], [first_rank(y, g) for g in y["ev"]]],
                          "lead": [[(blk["refs"][:3], round(blk["score"], 4)) for blk in q["blocks"][:show]] for q in (x, y)]})
    return moved


def main(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["where", "diff"])
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--conv", default=None, help="diff: only this conversation (e.g. a one-conversation rebuild)")
    args = parser.parse_args(argv)
    dumps = [json.loads(p.read_text(encoding="utf-8")) for p in args.dumps]
    if args.mode == "where":
        report: Any = {str(p): {c: dict(s) for c, s in where(d, args.budget).items()} for p, d in zip(args.dumps, dumps, strict=True)}
    else:
        if len(dumps) != 2:
            parser.error("diff takes two dumps")
        report = diff(dumps[0], dumps[1], args.budget, args.conv)
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()

"""LoCoMo: selection and reordering ideas under the 10-message budget, replayed on the
search's ranked lists, leave one conversation out (issue 19 §7, sixth session).

Why: ``context_replay_loo.py`` screened rules that raise or lower blocks by what a message
*is* (a question, an addressed turn, a field). This script screens rules that use the
*question against each cited message* and the *list as a whole*: a second similarity signal
fused into the ranking, redundancy among the leading blocks (MMR), and the session dates a
question names. Every variant only reorders the 40 blocks a search returned, so the dump
of ``context_budget_loo.py --dump D`` is enough; recall@10 messages is scored as the runner
scores it, and each family's fold picks its grid point (or the baseline) on the other four
conversations (:func:`context_replay_loo.loo`).

Variants:

* ``e5-msg w``: the block's rank fused with the rank of its first cited message by E5 cosine
  to the question (``1/(60 + rank) + w/(60 + rank_e5)``; the first block stays first);
* ``lex-msg w``: the same with the lexical similarity of question and message text;
* ``mmr l`` / ``mmr-list l``: greedy maximal marginal relevance over the messages' E5
  vectors, ``(1 − l) · relevance − l · max cosine to the blocks already taken``
  (relevance = the block's score over the best score; for every question, or only for list
  questions);
* ``dup t``: a block whose message is an E5 near-duplicate (cosine ≥ ``t``) of a higher
  block's is moved behind the first ten;
* ``date g``: a question naming a calendar date or month ("on 8 May 2023", "in June
  2023") raises blocks of sessions held on that day / in that month, and within a week
  after it (the message that says "yesterday" is written later), ``score · (1 + g)``;
* ``length a`` / ``length-list a``: a prior for long, content-bearing messages,
  ``score · (n_words / 10)^a`` (every question, or list questions only);
* ``answer``: a question turn of the other person among the first ``top`` blocks is followed
  by its answer (the next turn, by the named speaker) — the answer tells about the speaker;
* ``prior b`` / ``prior-list b``: a learned evidence prior — a logistic model of "this
  block cites gold" over grammar features of the message (a time cue such as
  "yesterday"/"last week", "I just", share of questions, a first-person action, addressed to
  the other person, an image, length, opening turn of a session) and its rank, **fitted on
  the other four conversations in each fold**; the block's score is multiplied by
  ``exp(b · feature part of the logit)``;
* ``session g depth`` / ``session-speaker`` / ``session-list`` (seventh session): session
  evidence — a session's mass is the summed score of its blocks among the first ``depth``;
  every block gets ``score · (1 + g · mass / max mass)`` (per session, per session and
  speaker, or for list questions only);
* ``agree g top`` / ``agree-list``: agreement among the leading blocks — ``score · (1 + g ·
  c)``, ``c`` the min-max scaled mean E5 cosine of the block's message to those of the first
  ``top`` blocks (0: score-weighted centrality among the first 20).

    python benchmarks/context_budget_loo.py --settings '[{}]' --dump /tmp/dump.json
    python benchmarks/context_replay_select.py --dump /tmp/dump.json [--out-json F] [--only session,agree-list]

Message texts and speakers are read from ``../shared/bench/locomo-dev.json`` at run time
(never stored here); the E5 vectors of the 2,760 dev messages take ~3 CPU minutes
(``--vectors DIR`` keeps them between runs).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from datetime import date
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from context_replay_loo import (
    Block,
    Item,
    Replay,
    Rule,
    emit_report,
    is_list_question,
    loo,
    question_share,
    summary,
    tells_action,
)

from knowhub.context.retrieval.speaker_focus import addresses_other
from knowhub.text import similarity

_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"]
_MONTH = "|".join(_MONTHS)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH}),?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH}),?\s+(\d{{4}})\b", re.I)
_SESSION_NO = re.compile(r"/s(\d+)$")
RRF_K = 60
#: a told time: "yesterday", "last week", "two days ago" (English grammar)
_TIME_CUE = re.compile(r"\b(yesterday|last (?:week|weekend|month|night|year|monday|tuesday|wednesday|thursday|friday|"
                       r"saturday|sunday)|ago|the other day|this (?:morning|week|weekend|past))\b", re.I)
_JUST = re.compile(r"\b(I|we)\s+(just|recently|finally)\b", re.I)
PRIOR_FEATURES = ("rank", "time", "just", "question", "action", "addressed", "image", "length", "opening")


def question_dates(question: str) -> list[tuple[date, date]]:
    """Day or month spans a question names (first day, last day)."""
    spans: list[tuple[date, date]] = []
    taken: list[tuple[int, int]] = []
    for match in _DAY_MONTH_YEAR.finditer(question):
        day = date(int(match.group(3)), _MONTHS.index(match.group(2).lower()) + 1, int(match.group(1)))
        spans.append((day, day))
        taken.append(match.span())
    for match in _MONTH_DAY_YEAR.finditer(question):
        day = date(int(match.group(3)), _MONTHS.index(match.group(1).lower()) + 1, int(match.group(2)))
        spans.append((day, day))
        taken.append(match.span())
    for match in _MONTH_YEAR.finditer(question):
        if any(a <= match.start() < b for a, b in taken):
            continue
        year, month = int(match.group(2)), _MONTHS.index(match.group(1).lower()) + 1
        last = date(year + (month == 12), month % 12 + 1, 1).toordinal() - 1
        spans.append((date(year, month, 1), date.fromordinal(last)))
    return spans


def session_date(text: str) -> date | None:
    """``1:56 pm on 8 May, 2023`` → 2023-05-08."""
    match = _DAY_MONTH_YEAR.search(text)
    return date(int(match.group(3)), _MONTHS.index(match.group(2).lower()) + 1, int(match.group(1))) if match else None


class SelectReplay(Replay):
    """:class:`Replay` with message vectors and session dates."""

    def __init__(self, dump: list[Item], convs: list[dict[str, Any]]) -> None:
        super().__init__(dump, convs)
        self.dates = {(c["sample_id"], int(s["index"])): session_date(s["date_time"]) for c in convs for s in c["sessions"]}

    def load_vectors(self, folder: Path | None) -> None:
        if folder and (folder / "messages.npy").exists():
            index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
            for key, vec in zip(index["keys"], np.load(folder / "messages.npy"), strict=True):
                self.vectors[tuple(key)] = vec
            self.query_vectors = dict(zip(index["questions"], np.load(folder / "questions.npy"), strict=True))
            if all(item["q"] in self.query_vectors for item in self.dump):
                return
        self.embed()
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
            keys = sorted(self.vectors)
            np.save(folder / "messages.npy", np.stack([self.vectors[k] for k in keys]))
            asked = sorted(self.query_vectors)
            np.save(folder / "questions.npy", np.stack([self.query_vectors[q] for q in asked]))
            (folder / "index.json").write_text(json.dumps({"keys": [list(k) for k in keys], "questions": asked}),
                                               encoding="utf-8")

    def vec(self, item: Item, block: Block) -> Any:
        return self.vectors.get((item["conv"], block["refs"][0])) if block["refs"] else None

    def cosine(self, item: Item, block: Block) -> float:
        v = self.vec(item, block)
        return float(v @ self.query_vectors[item["q"]]) if v is not None else -1.0

    # ------------------------------------------------------------------ rules

    def fuse(self, signal: Any, weight: float) -> Rule:
        """The list's rank fused with the rank by ``signal(item, block)`` (reciprocal ranks)."""
        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            values = [signal(item, b) for b in blocks]
            order = sorted(range(len(blocks)), key=lambda i: -values[i])
            second = {i: r for r, i in enumerate(order)}
            fused = {i: 1 / (RRF_K + i) + weight / (RRF_K + second[i]) for i in range(len(blocks))}
            rest = sorted(range(1, len(blocks)), key=lambda i: (bool(blocks[i].get("redundant")), -fused[i]))
            return [blocks[0], *(blocks[i] for i in rest)]
        return rule

    def mmr(self, lam: float, lists_only: bool) -> Rule:
        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            if (lists_only and not is_list_question(item["q"])) or len(blocks) < 3:
                return blocks
            top = max(b["score"] for b in blocks) or 1.0
            chosen = [blocks[0]]
            left = blocks[1:]
            while left and len(chosen) < 12:
                def gain(b: Block) -> float:
                    v = self.vec(item, b)
                    red = max((float(v @ w) for c in chosen if v is not None and (w := self.vec(item, c)) is not None),
                              default=0.0)
                    return (1 - lam) * b["score"] / top - lam * red
                best = max(left, key=gain)
                chosen.append(best)
                left.remove(best)
            return chosen + left
        return rule

    def dedupe(self, threshold: float) -> Rule:
        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            keep: list[Block] = []
            late: list[Block] = []
            for block in blocks:
                v = self.vec(item, block)
                near = v is not None and any(float(v @ w) >= threshold for k in keep[:10]
                                             if (w := self.vec(item, k)) is not None)
                (late if near and len(keep) < 10 else keep).append(block)
            return keep[:10] + late + keep[10:]
        return rule

    def date_boost(self, gain: float, after_days: int) -> Rule:
        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            spans = question_dates(item["q"])
            if not spans:
                return blocks
            for block in blocks:
                match = _SESSION_NO.search(str(block.get("sess") or ""))
                held = self.dates.get((item["conv"], int(match.group(1)))) if match else None
                if held and any(a.toordinal() <= held.toordinal() <= b.toordinal() + after_days for a, b in spans):
                    block["score"] *= 1 + gain
            return blocks[:1] + sorted(blocks[1:], key=lambda b: (bool(b.get("redundant")), -b["score"]))
        return rule

    def words(self, item: Item, block: Block) -> int:
        return len(re.sub(r"\[[^\]]*\]", " ", self.block_text(item, block)).split())

    def answer_after(self, top: int) -> Rule:
        """After a question turn of the other person (first ``top`` blocks), its answer: the
        next turn of the session when the named speaker says it."""
        following = {(cid, a[0]): b for cid, rows in self.turns.items() for a, b in pairwise(rows)
                     if a[0].split(":")[0] == b[0].split(":")[0]}

        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            named = self.named(item)
            if len(named) != 1:
                return blocks
            out: list[Block] = []
            for i, block in enumerate(blocks):
                out.append(block)
                if i >= top or not block["refs"] or self.speaker(item, block) in named:
                    continue
                nxt = following.get((item["conv"], block["refs"][0]))
                if nxt and nxt[1] in named and question_share(self.block_text(item, block)) > 0:
                    out.append({"refs": [nxt[0]], "score": block["score"], "sess": block.get("sess")})
            seen: set[tuple[str, ...]] = set()
            return [b for b in out if not (tuple(b["refs"]) in seen or seen.add(tuple(b["refs"])))]
        return rule

    def session_prior(self, gain: float, depth: int, per_speaker: bool, lists_only: bool) -> Rule:
        """Session evidence: each block's score times ``1 + gain · mass(s) / max mass``, where a
        session's (or a session and speaker's) mass is the summed score of its blocks among
        the first ``depth`` (evidence of one person and topic told over a whole session)."""
        def key(item: Item, block: Block) -> Any:
            sess = block.get("sess")
            if sess is None:
                return None
            return (sess, self.speaker(item, block)) if per_speaker else sess

        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            if lists_only and not is_list_question(item["q"]):
                return blocks
            mass: dict[Any, float] = defaultdict(float)
            for block in blocks[:depth]:
                if (k := key(item, block)) is not None:
                    mass[k] += block["score"]
            top = max(mass.values(), default=0.0) or 1.0
            for block in blocks:
                k = key(item, block)
                if k is not None:
                    block["score"] *= 1 + gain * mass.get(k, 0.0) / top
            return blocks[:1] + sorted(blocks[1:], key=lambda b: (bool(b.get("redundant")), -b["score"]))
        return rule

    def neighbours(self, gain: float, top: int, lists_only: bool) -> Rule:
        """Evidence that agrees: each block's score times ``1 + gain · c``, ``c`` the mean E5
        cosine of its message to the messages of the first ``top`` blocks (``top`` 0: to every
        other block of the first 20, weighted by score — centrality), min-max scaled per list."""
        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            if lists_only and not is_list_question(item["q"]):
                return blocks
            vecs = [self.vec(item, b) for b in blocks]
            ref = [(v, b["score"]) for v, b in zip(vecs[: top or 20], blocks, strict=False) if v is not None]
            if not ref:
                return blocks
            raw = []
            for v in vecs:
                if v is None:
                    raw.append(None)
                    continue
                pairs = [(float(v @ w), s) for w, s in ref if w is not v]
                raw.append(sum(c * s for c, s in pairs) / (sum(s for _, s in pairs) or 1.0) if pairs else None)
            vals = [x for x in raw if x is not None]
            lo, hi = min(vals), max(vals)
            for block, x in zip(blocks, raw, strict=True):
                if x is not None and hi > lo:
                    block["score"] *= 1 + gain * (x - lo) / (hi - lo)
            return blocks[:1] + sorted(blocks[1:], key=lambda b: (bool(b.get("redundant")), -b["score"]))
        return rule

    def features(self, item: Item, rank: int, block: Block) -> list[float]:
        text = self.block_text(item, block)
        turn = int(block["refs"][0].split(":")[-1]) if block["refs"] and ":" in block["refs"][0] else 99
        values = {"rank": math.log1p(rank), "time": float(bool(_TIME_CUE.search(text))),
                  "just": float(bool(_JUST.search(text))), "question": question_share(text),
                  "action": float(tells_action(text)), "addressed": float(addresses_other(text)),
                  "image": float("[image:" in text), "length": math.log1p(self.words(item, block)),
                  "opening": float(turn <= 2)}
        return [values[name] for name in PRIOR_FEATURES]

    def fit_prior(self, conversations: set[str], l2: float = 1.0) -> tuple[Any, Any, Any]:
        """Logistic regression (Newton steps, L2) of "block cites gold" on :data:`PRIOR_FEATURES`
        over the dumped blocks of ``conversations``; returns (weights, mean, scale)."""
        rows, gold = [], []
        for item in self.dump:
            if item["conv"] in conversations:
                for i, block in enumerate(item["blocks"]):
                    if block["refs"]:
                        rows.append(self.features(item, i, block))
                        gold.append(float(bool(set(block["refs"]) & set(item["ev"]))))
        x, y = np.array(rows), np.array(gold)
        mean, scale = x.mean(0), x.std(0) + 1e-9
        z = np.c_[np.ones(len(x)), (x - mean) / scale]
        w = np.zeros(z.shape[1])
        ridge = l2 * np.diag(np.r_[0.0, np.ones(len(w) - 1)])
        for _ in range(30):
            p = 1 / (1 + np.exp(-z @ w))
            w -= np.linalg.solve((z * (p * (1 - p))[:, None]).T @ z + ridge, z.T @ (p - y) + ridge @ w)
        return w, mean, scale

    def prior(self, model: tuple[Any, Any, Any], beta: float, lists_only: bool) -> Rule:
        w, mean, scale = model

        def factor(item: Item, block: Block) -> float:
            rank = next(i for i, b in enumerate(item["blocks"]) if b["uri"] == block.get("uri"))
            z = (np.array(self.features(item, rank, block)) - mean) / scale
            return math.exp(beta * float(z[1:] @ w[2:]))  # the feature part: no bias, no rank
        return self.rescore(lambda i, b: factor(i, b) if b["refs"] else 1.0,
                            (lambda i: is_list_question(i["q"])) if lists_only else (lambda _: True))

    def prior_results(self) -> tuple[list[tuple[str, dict[str, list[tuple[int, float]]]]], dict[str, Any]]:
        """The learned prior, nested leave one conversation out: for held-out conversation
        *i* the model is fitted on the other four and ``b`` is chosen on them (or the
        baseline); also, per grid point, every conversation scored by its held-out model."""
        convs = sorted({item["conv"] for item in self.dump})
        grid = [(lists_only, beta) for lists_only in (False, True) for beta in (0.05, 0.1, 0.2, 0.3)]
        base = self.evaluate(None)
        table: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(dict)
        out: dict[str, Any] = {}
        for lists_only in (False, True):
            family = f"prior{'-list' if lists_only else ''}"
            held: list[float] = []
            folds: dict[str, Any] = {}
            for test in convs:
                model = self.fit_prior(set(convs) - {test})
                runs = [("base", base)] + [(f"{family} b={beta}", self.evaluate(self.prior(model, beta, lists_only)))
                                           for lo, beta in grid if lo == lists_only]
                for name, per in runs[1:]:
                    table[name][test] = per[test]

                def train(per: dict[str, list[tuple[int, float]]], test: str = test) -> float:
                    xs = [r for c in convs if c != test for _, r in per[c]]
                    return round(sum(xs) / len(xs), 6)
                best = max(range(len(runs)), key=lambda i: (train(runs[i][1]), -i))
                rows = runs[best][1][test]
                folds[test] = {"chosen": runs[best][0], "recall": round(sum(r for _, r in rows) / len(rows), 4)}
                held += [r for _, r in rows]
            out[family] = {"folds": folds, "loo_mean": round(sum(f["recall"] for f in folds.values()) / len(folds), 4),
                           "loo_pooled": round(sum(held) / len(held), 4)}
        return list(table.items()), out

    def select_variants(self) -> list[tuple[str, Rule | None]]:
        out: list[tuple[str, Rule | None]] = [("base", None)]
        for w in (0.25, 0.5, 1.0):
            out.append((f"e5-msg w={w}", self.fuse(self.cosine, w)))
        for w in (0.25, 0.5, 1.0):
            out.append((f"lex-msg w={w}", self.fuse(lambda i, b: similarity(i["q"], self.block_text(i, b)), w)))
        for lam in (0.1, 0.2, 0.3):
            out.append((f"mmr l={lam}", self.mmr(lam, False)))
            out.append((f"mmr-list l={lam}", self.mmr(lam, True)))
        for t in (0.9, 0.95):
            out.append((f"dup t={t}", self.dedupe(t)))
        for g in (0.1, 0.25, 0.5):
            for after in (0, 7):
                out.append((f"date g={g} after={after}", self.date_boost(g, after)))
        for a in (0.05, 0.1, 0.2, 0.3):
            out.append((f"length a={a}", self.rescore(lambda i, b, a=a: (max(1, self.words(i, b)) / 10) ** a)))
            out.append((f"length-list a={a}", self.rescore(lambda i, b, a=a: (max(1, self.words(i, b)) / 10) ** a,
                                                            lambda i: is_list_question(i["q"]))))
        for top in (5, 10, 20):
            out.append((f"answer top={top}", self.answer_after(top)))
        for g in (0.05, 0.1, 0.2, 0.4):
            for depth in (10, 40):
                out.append((f"session g={g} depth={depth}", self.session_prior(g, depth, False, False)))
                out.append((f"session-speaker g={g} depth={depth}", self.session_prior(g, depth, True, False)))
                out.append((f"session-list g={g} depth={depth}", self.session_prior(g, depth, False, True)))
        for g in (0.05, 0.1, 0.2, 0.4):
            for top in (0, 1, 3):
                out.append((f"agree g={g} top={top}", self.neighbours(g, top, False)))
                out.append((f"agree-list g={g} top={top}", self.neighbours(g, top, True)))
        return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, required=True, help="context_budget_loo.py --dump output")
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--vectors", type=Path, default=None, help="folder caching the messages' E5 vectors")
    parser.add_argument("--only", default=None, help="comma-separated family prefixes to replay (default: all)")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    replay = SelectReplay(json.loads(args.dump.read_text(encoding="utf-8")), load_locomo(args.bench_dir / LOCOMO_FILE))
    replay.load_vectors(args.vectors)
    only = tuple(f"{p} " for p in args.only.split(",")) if args.only else None
    variants = [(n, r) for n, r in replay.select_variants() if only is None or n == "base" or n.startswith(only)]
    results = [(name, replay.evaluate(rule)) for name, rule in variants]
    learned, learned_loo = replay.prior_results() if only is None else ([], {})
    report: dict[str, Any] = {"variants": {name: summary(per) for name, per in results + learned}}
    families = ["e5-msg", "lex-msg", "mmr ", "mmr-list", "dup", "date", "length ", "length-list", "answer", "session ",
                "session-speaker", "session-list", "agree ", "agree-list"]
    families = [f for f in families if only is None or f"{f.strip()} " in only]
    report["loo"] = {fam.strip(): loo(results, fam) for fam in families} | learned_loo
    return emit_report(report, args.out_json, name_width=24, family_width=10)


if __name__ == "__main__":
    main()

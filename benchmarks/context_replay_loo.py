"""LoCoMo: ranking and aggregate ideas replayed on the search's ranked lists, leave one
conversation out (issue 19 §7).

Why: a rule that only reorders the 40 blocks a search returns, or puts one extra block
among them, needs no new commit to be measured. ``context_budget_loo.py --dump D`` writes
each question's ranked blocks (URI, fused score, cited message ids, session); this script
applies every variant below to those lists and scores recall@10 messages exactly as the
runner does (a block's refs in order until ten messages are collected). Each variant is a
*general-language* rule: English question grammar, the semantic fields of
:mod:`knowhub.providers.llm.local_context_topics` and the extractor's first-person action
cue; the message texts and speakers are read from ``../shared/bench/locomo-dev.json`` at run
time (never stored here).

Variants (each with a small grid; the fold picks on the other four conversations):

* ``question-turn``: a block whose message is mostly questions ("Anything new?") is
  demoted, ``score · (1 − p · share of sentences ending in "?")``;
* ``field``: a block whose message belongs to a semantic field the question names (by a
  general word or a member) is raised, ``score · (1 + g)``;
* ``action-list``: in a list question ("What activities …", "Which kinds of …"), a block
  whose message tells something the speaker did ("I/we" + an action verb) is raised;
* ``subject``: a question naming both speakers, one of them only as a possessive
  ("What does A think about B's …"), raises A's blocks;
* ``both-interleave``: a question naming both speakers alternates their blocks;
* ``addressed``: for a question naming one speaker, that speaker's blocks whose message
  addresses the other person (:func:`~knowhub.context.retrieval.speaker_focus.addresses_other`)
  are demoted, ``score · (1 − p)`` — the rule the search now applies itself
  (``addressee_penalty``), so replay a dump made with ``{"addressee_penalty": 0}``;
* ``recent``: a question asking for the latest ("recently", "lately", "now") raises blocks
  of later sessions, ``score · (1 + g · position of the block's session among the
  listed sessions, 0 … 1)``;
* ``aggregate``: the per-person aggregate memory, simulated — for a question naming one
  speaker, a block citing that speaker's messages of the question's fields (a list
  question's "activities"/"hobbies" name the pastime fields) is put second, its refs
  ordered chronologically, by lexical similarity to the question, by their rank in the
  search, by E5 cosine (``--e5``) or by an **oracle** (gold first: the bound of any
  ordering); ``first`` keeps one message per distinct field member (its first mention).

    python benchmarks/context_budget_loo.py --settings '[{"addressee_penalty": 0}]' --dump /tmp/dump.json
    python benchmarks/context_replay_loo.py --dump /tmp/dump.json [--e5] [--out-json F]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from context_budget_loo import CATEGORY_NAMES, questions

from knowhub.context.retrieval.speaker_focus import addresses_other
from knowhub.providers.llm.local_context_rules import _ACTION_HINT  # the extractor's own action cue
from knowhub.providers.llm.local_context_topics import FIELDS, topics_of
from knowhub.text import similarity

Block = dict[str, Any]
Item = dict[str, Any]
Rule = Callable[[Item, list[Block]], list[Block]]

#: Fields of things people do for pleasure: what "activities", "hobbies", "interests" or
#: "pastimes" ask for (general-language grouping of the lexicon's fields).
PASTIME_FIELDS = frozenset({
    "sports", "martial arts", "musical instruments", "music", "art and crafts", "nature and outdoors", "games",
    "dance and performance", "books and reading", "writing", "food and cooking", "travel", "film and television",
    "collections", "desserts and sweets"})
_PASTIME_WORDS = re.compile(r"\b(activit\w*|hobb\w*|pastimes?|interests?|leisure|for fun|free time|spare time)\b", re.I)
#: "What/Which [kinds of] <plural noun> …": a question asking for a list.
_LIST_Q = re.compile(r"^\s*(?:what|which)\s+(kinds?\s+of\s+|types?\s+of\s+|sorts?\s+of\s+)?([a-z\-]+)\b", re.I)
_NOT_PLURAL = frozenset({"is", "was", "does", "has", "this", "his", "yes", "its", "as", "us"})
_FIRST_PERSON = re.compile(r"\b(?:I|we|I'm|I've|we're|we've|my|our)\b", re.I)
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_IMAGE = re.compile(r"\[image:[^\]]*\]")
_RECENT = re.compile(r"\b(recent(ly)?|lately|latest|newest|currently|now|these days)\b", re.I)
_SESSION_NO = re.compile(r"/s(\d+)$")
_GENERAL: dict[str, set[str]] = {}
for _name, _field in FIELDS.items():
    for _word in _field.general:
        _GENERAL.setdefault(_word.lower(), set()).add(_name)


def is_list_question(question: str) -> bool:
    match = _LIST_Q.match(question)
    if not match:
        return False
    word = match.group(2).lower()
    return bool(match.group(1)) or (word.endswith("s") and word not in _NOT_PLURAL)


def question_fields(question: str) -> set[str]:
    """Fields the question names by a member or a general word (plural folded)."""
    out = set(topics_of(question))
    for word in re.findall(r"[a-z][a-z\-]*", question.lower()):
        for form in {word, word[:-1] if word.endswith("s") else word, word[:-3] + "y" if word.endswith("ies") else word}:
            out |= _GENERAL.get(form, set())
    if _PASTIME_WORDS.search(question):
        out |= PASTIME_FIELDS
    return out


def question_share(text: str) -> float:
    sentences = [s.strip() for s in _SENTENCE.findall(_IMAGE.sub("", text)) if len(s.strip()) > 1]
    return sum(s.endswith("?") for s in sentences) / len(sentences) if sentences else 0.0


def tells_action(text: str) -> bool:
    plain = _IMAGE.sub("", text)
    return bool(_ACTION_HINT.search(plain) and _FIRST_PERSON.search(plain))


class Replay:
    """The dumped ranked lists joined with the conversations' texts and speakers."""

    def __init__(self, dump: list[Item], convs: list[dict[str, Any]]) -> None:
        self.convs = {c["sample_id"]: c for c in convs}
        self.turns: dict[str, list[tuple[str, str, str]]] = {}  # conv → [(id, speaker, text)]
        for cid, conv in self.convs.items():
            self.turns[cid] = [(t["dia_id"], t["speaker"], t["text"] + (f" [image: {t['blip_caption']}]" if t.get("blip_caption") else ""))
                               for s in conv["sessions"] for t in s["turns"]]
        self.text = {(cid, tid): (spk, text) for cid, rows in self.turns.items() for tid, spk, text in rows}
        self.topics = {key: set(topics_of(text)) for key, (_, text) in self.text.items()}
        asked: Counter[str] = Counter()
        by_conv = {cid: questions(conv) for cid, conv in self.convs.items()}
        for item in dump:  # the dump lists each conversation's questions in runner order
            item["q"] = by_conv[item["conv"]][asked[item["conv"]]]["question"]
            asked[item["conv"]] += 1
        self.dump = dump
        self.vectors: dict[tuple[str, str], Any] = {}
        self.query_vectors: dict[str, Any] = {}

    def named(self, item: Item) -> list[str]:
        return [s for s in self.convs[item["conv"]]["speakers"] if re.search(rf"\b{re.escape(s)}\b", item["q"])]

    def speaker(self, item: Item, block: Block) -> str | None:
        return self.text[(item["conv"], block["refs"][0])][0] if block["refs"] else None

    def block_text(self, item: Item, block: Block) -> str:
        return self.text[(item["conv"], block["refs"][0])][1] if block["refs"] else ""

    def embed(self) -> None:
        """E5 vectors of every message ("Speaker: text") and question (the default embedder)."""
        from knowhub.providers.embedding import default_embedder
        embedder = default_embedder()
        keys = sorted(self.text)
        for key, vec in zip(keys, embedder.embed_matrix([f"{self.text[k][0]}: {self.text[k][1]}" for k in keys]), strict=True):
            self.vectors[key] = vec
        asked = sorted({item["q"] for item in self.dump})
        method = getattr(embedder, "embed_queries", None) or embedder.embed_matrix
        self.query_vectors = dict(zip(asked, method(asked), strict=True))

    # ------------------------------------------------------------------ scoring

    def evaluate(self, rule: Rule | None) -> dict[str, list[tuple[int, float]]]:
        per: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for item in self.dump:
            blocks = rule(item, [dict(b) for b in item["blocks"]]) if rule else item["blocks"]
            got: dict[str, None] = {}
            for block in blocks:
                for ref in block["refs"]:
                    if len(got) < 10:
                        got.setdefault(ref, None)
            gold = set(item["ev"])
            per[item["conv"]].append((item["cat"], len(gold & set(got)) / len(gold)))
        return per

    # ------------------------------------------------------------------ rules

    def rescore(self, factor: Callable[[Item, Block], float], when: Callable[[Item], bool] = lambda _: True) -> Rule:
        """Scores times ``factor``; the first block stays first (as session cohesion keeps it)."""
        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            if not when(item):
                return blocks
            for block in blocks:
                block["score"] *= factor(item, block)
            return blocks[:1] + sorted(blocks[1:], key=lambda b: (bool(b.get("redundant")), -b["score"]))
        return rule

    def subject(self, item: Item) -> str | None:
        who = self.named(item)
        if len(who) != 2:
            return None
        plain = [s for s in who if not re.search(rf"\b{re.escape(s)}['’]s\b", item["q"])]
        return plain[0] if len(plain) == 1 else None

    def interleave(self, item: Item, blocks: list[Block]) -> list[Block]:
        if len(self.named(item)) != 2:
            return blocks
        queues: dict[str | None, list[Block]] = {}
        for block in blocks:
            queues.setdefault(self.speaker(item, block), []).append(block)
        out: list[Block] = []
        while any(queues.values()):
            for queue in queues.values():
                if queue:
                    out.append(queue.pop(0))
        return out

    @staticmethod
    def recent(gain: float) -> Rule:
        def number(block: Block) -> int | None:
            match = _SESSION_NO.search(str(block.get("sess") or ""))
            return int(match.group(1)) if match else None

        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            numbers = [n for n in map(number, blocks) if n is not None]
            if not _RECENT.search(item["q"]) or len(set(numbers)) < 2:
                return blocks
            low, high = min(numbers), max(numbers)
            for block in blocks:
                n = number(block)
                if n is not None:
                    block["score"] *= 1 + gain * (n - low) / (high - low)
            return blocks[:1] + sorted(blocks[1:], key=lambda b: (bool(b.get("redundant")), -b["score"]))
        return rule

    def aggregate(self, n_refs: int, order: str, first_mention: bool, lists_only: bool) -> Rule:
        def rule(item: Item, blocks: list[Block]) -> list[Block]:
            who = self.named(item)
            if len(who) != 1 or (lists_only and not is_list_question(item["q"])):
                return blocks
            fields = question_fields(item["q"])
            lines: list[str] = []
            seen: set[tuple[str, str]] = set()
            for tid, spk, text in self.turns[item["conv"]]:
                if spk != who[0] or not self.topics[(item["conv"], tid)] & fields:
                    continue
                if first_mention:
                    members = {(f, m.lower()) for f in self.topics[(item["conv"], tid)] & fields
                               for m in re.findall(r"[a-z]+", text.lower()) if m in _member_words(f)}
                    if members and members <= seen:
                        continue
                    seen |= members
                lines.append(tid)
            if not lines:
                return blocks
            if order == "similarity":
                lines.sort(key=lambda t: -similarity(item["q"], self.text[(item["conv"], t)][1]))
            elif order == "search":
                rank: dict[str, int] = {}
                for i, block in enumerate(blocks):
                    for ref in block["refs"]:
                        rank.setdefault(ref, i)
                lines.sort(key=lambda t: rank.get(t, len(blocks)))
            elif order == "e5":
                qv = self.query_vectors[item["q"]]
                lines.sort(key=lambda t: -float(self.vectors[(item["conv"], t)] @ qv))
            elif order == "oracle":
                lines.sort(key=lambda t: t not in item["ev"])
            return [*blocks[:1], {"refs": lines[:n_refs], "score": 0.0}, *blocks[1:]]
        return rule

    def variants(self, e5: bool) -> list[tuple[str, Rule | None]]:
        out: list[tuple[str, Rule | None]] = [("base", None)]
        for p in (0.1, 0.2, 0.3):
            out.append((f"question-turn p={p}", self.rescore(lambda i, b, p=p: 1 - p * question_share(self.block_text(i, b)))))
        for g in (0.05, 0.1, 0.2):
            out.append((f"field g={g}", self.rescore(
                lambda i, b, g=g: 1 + g if question_fields(i["q"]) & self.topics.get((i["conv"], (b["refs"] or [""])[0]), set()) else 1.0)))
        for g in (0.05, 0.1, 0.2):
            out.append((f"action-list g={g}", self.rescore(lambda i, b, g=g: 1 + g if tells_action(self.block_text(i, b)) else 1.0,
                                                           lambda i: is_list_question(i["q"]))))
        for g in (0.1, 0.25):
            out.append((f"subject g={g}", self.rescore(lambda i, b, g=g: 1 + g if self.speaker(i, b) == self.subject(i) else 1.0,
                                                       lambda i: self.subject(i) is not None)))
        out.append(("both-interleave", self.interleave))
        for p in (0.05, 0.1, 0.2, 0.3):
            out.append((f"addressed p={p}", self.rescore(
                lambda i, b, p=p: 1 - p if self.speaker(i, b) in self.named(i) and addresses_other(self.block_text(i, b)) else 1.0,
                lambda i: len(self.named(i)) == 1)))
        for g in (0.1, 0.2, 0.4):
            out.append((f"recent g={g}", self.recent(g)))
        orders = ["chronological", "similarity", "search", *(["e5"] if e5 else []), "oracle"]
        for n in (3, 5):
            for order in orders:
                for first in (False, True):
                    out.append((f"aggregate lists n={n} {order}{' first' if first else ''}", self.aggregate(n, order, first, True)))
        for order in ("search", *(["e5"] if e5 else []), "oracle"):
            out.append((f"aggregate all-questions n=5 {order}", self.aggregate(5, order, False, False)))
        return out


_MEMBER_CACHE: dict[str, frozenset[str]] = {}


def _member_words(field: str) -> frozenset[str]:
    """A field's single-word members with their wildcard stripped (for first-mention dedupe)."""
    if field not in _MEMBER_CACHE:
        _MEMBER_CACHE[field] = frozenset(m.rstrip("*") for m in FIELDS[field].members if m.isascii() and " " not in m)
    return _MEMBER_CACHE[field]


def summary(per: dict[str, list[tuple[int, float]]]) -> dict[str, float]:
    rows = [r for v in per.values() for r in v]
    out = {cid: round(sum(r for _, r in v) / len(v), 4) for cid, v in sorted(per.items())}
    out["all"] = round(sum(r for _, r in rows) / len(rows), 4)
    for cat, name in CATEGORY_NAMES.items():
        xs = [r for c, r in rows if c == cat]
        out[name] = round(sum(xs) / len(xs), 4) if xs else 0.0
    return out


def loo(results: list[tuple[str, dict[str, list[tuple[int, float]]]]], family: str | None = None) -> dict[str, Any]:
    """Fold *i* takes the variant (of ``family``, plus base; ties to base) best on the other
    conversations and reports it on conversation *i*; oracles (bounds) are never chosen."""
    pool = [r for r in results if "oracle" not in r[0] and (r[0] == "base" or family is None or r[0].startswith(family))]
    ids = sorted(pool[0][1])
    folds: dict[str, Any] = {}
    held: list[float] = []

    def train(per: dict[str, list[tuple[int, float]]], test: str) -> float:
        xs = [r for cid in ids if cid != test for _, r in per[cid]]
        return round(sum(xs) / len(xs), 6)

    for test in ids:
        best = max(range(len(pool)), key=lambda i: (train(pool[i][1], test), -i))
        rows = pool[best][1][test]
        folds[test] = {"chosen": pool[best][0], "recall": round(sum(r for _, r in rows) / len(rows), 4)}
        held += [r for _, r in rows]
    return {"folds": folds, "loo_mean": round(sum(f["recall"] for f in folds.values()) / len(folds), 4),
            "loo_pooled": round(sum(held) / len(held), 4)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, required=True, help="context_budget_loo.py --dump output")
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--e5", action="store_true", help="also order aggregates by E5 cosine (embeds every message)")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    replay = Replay(json.loads(args.dump.read_text(encoding="utf-8")), load_locomo(args.bench_dir / LOCOMO_FILE))
    if args.e5:
        replay.embed()
    results = [(name, replay.evaluate(rule)) for name, rule in replay.variants(args.e5)]
    report: dict[str, Any] = {"variants": {name: summary(per) for name, per in results}}
    families = ["question-turn", "field", "action-list", "subject", "both-interleave", "addressed", "recent",
                "aggregate lists", "aggregate all"]
    report["loo"] = {fam: loo(results, fam) for fam in families}
    report["loo"]["everything"] = loo(results)
    return emit_report(report, args.out_json, name_width=48, family_width=18)


def emit_report(report: dict[str, Any], out_json: Path | None, *, name_width: int, family_width: int) -> dict[str, Any]:
    """Print each variant's figures and each family's leave-one-out folds; write the JSON."""
    for name, row in report["variants"].items():
        print(f"{name:{name_width}s} " + " ".join(f"{k}={v:.4f}" for k, v in row.items()))
    for fam, res in report["loo"].items():
        print(f"LOO {fam:{family_width}s} mean {res['loo_mean']:.4f} pooled {res['loo_pooled']:.4f} "
              + ", ".join(f"{cid}: {f['chosen']} {f['recall']:.4f}" for cid, f in res["folds"].items()))
    if out_json:
        out_json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()

"""Corpus and principals of the knowledge benchmark (``knowledge_bench.py``), from real text.

Every LoCoMo observation (``user_profile``) and dialog turn (``usecase``/``strategy``/
``plan``), each tagged with its conversation and carrying its ``dia_id`` as
``message_id``, plus ICD-10-CM code descriptions (``definition``, 30% with a second type).
``task`` is a short description, ``content`` a longer text. Scopes are spread over 20
users, 8 projects, 5 teams, 2 orgs and public; every item has score 3. Deterministic for a
given seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from knowhub.scope import Principal

N_USERS, N_PROJECTS, N_TEAMS, N_ORGS = 20, 8, 5, 2
SCOPE_WEIGHTS = (("user", 25), ("project", 15), ("team", 25), ("org", 25), ("public", 10))
EXTRA_TYPES = ("plan", "tool", "strategy", "usecase")


# --------------------------------------------------------------------------- principals


def user_id(i: int) -> str:
    return f"user:u{i:02d}"


def memberships(i: int) -> list[str]:
    """User ``i`` belongs to one project, one team and one org."""
    return [f"project:p{i % N_PROJECTS}", f"team:t{i % N_TEAMS}", f"org:o{i % N_ORGS}"]


def user_principal(i: int) -> Principal:
    """User ``i`` with the right to publish into its org and public (the corpus puts
    items there)."""
    return Principal.of(user_id(i), memberships(i), publish=["public", f"org:o{i % N_ORGS}"])


def all_seeing_principal() -> Principal:
    """Member of every scope the corpus uses: the principal of the quality runs."""
    scopes = [user_id(i) for i in range(N_USERS)]
    scopes += [f"project:p{i}" for i in range(N_PROJECTS)]
    scopes += [f"team:t{i}" for i in range(N_TEAMS)] + [f"org:o{i}" for i in range(N_ORGS)]
    scopes += [f"project:{c}" for c in ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")]
    return Principal.of("user:auditor", scopes)


def pick_scope(writer: int, rng: random.Random) -> str:
    kinds, weights = zip(*SCOPE_WEIGHTS, strict=True)
    kind = rng.choices(kinds, weights)[0]
    if kind == "user":
        return user_id(writer)
    if kind == "public":
        return "public"
    return next(m for m in memberships(writer) if m.startswith(kind + ":"))


# --------------------------------------------------------------------------- corpus


@dataclass
class Item:
    """One knowledge body to save, who writes it, and where it came from."""

    body: dict[str, Any]
    writer: int
    kind: str  # observation / turn / icd
    conv: str = ""


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def locomo_items(convs: list[dict[str, Any]], *, observations: bool, turns: bool) -> list[Item]:
    """Observations and/or turns as knowledge bodies (writer and scope filled in later)."""
    out: list[Item] = []
    for conv in convs:
        sid = conv["sample_id"]
        dates = {s["index"]: s["date_time"] for s in conv["sessions"]}
        if observations:
            for key, per_speaker in conv["observation"].items():
                session = int(key.split("_")[1])
                for speaker, pairs in per_speaker.items():
                    for pair in pairs:
                        if not isinstance(pair, list) or len(pair) < 2:
                            continue
                        text, dia = str(pair[0]), pair[1]
                        dia_ids = dia if isinstance(dia, list) else [dia]
                        for dia_id in [str(d) for d in dia_ids if d][:1]:
                            body = {
                                "task": _short(text, 200),
                                "content": f"{text} (observed in session {session} on "
                                f"{dates.get(session, '')}; about {speaker})",
                                "types": ["user_profile"],
                                "tags": {
                                    "conversation": sid,
                                    "kind": "observation",
                                    "speaker": speaker,
                                    "category": "background",
                                },
                                "message_id": dia_id,
                                "source": {
                                    "name": f"LoCoMo {sid}",
                                    "category": "exp",
                                    "message_id": dia_id,
                                },
                                "score": 3,
                            }
                            out.append(Item(body, 0, "observation", sid))
        if turns:
            for session in conv["sessions"]:
                for turn in session["turns"]:
                    text = turn["text"]
                    if turn.get("blip_caption"):
                        text += f" [shares a photo: {turn['blip_caption']}]"
                    body = {
                        "task": f"{turn['speaker']}: {_short(turn['text'], 90)}",
                        "content": f"{turn['speaker']} said on {session['date_time']}: {text}",
                        "types": [],
                        "tags": {"conversation": sid, "kind": "turn", "speaker": turn["speaker"]},
                        "message_id": turn["dia_id"],
                        "source": {
                            "name": f"LoCoMo {sid}",
                            "category": "exp",
                            "message_id": turn["dia_id"],
                        },
                        "score": 3,
                    }
                    out.append(Item(body, 0, "turn", sid))
    return out


def icd_items(nodes: list[dict[str, Any]], limit: int) -> list[Item]:
    """ICD-10-CM codes: task = the description, content = code, synonyms and parents."""
    by_id = {n["id"]: n for n in nodes}
    out: list[Item] = []
    for node in nodes:
        if len(out) >= limit:
            break
        parents: list[str] = []
        parent = by_id.get(node["parent_id"]) if node["parent_id"] else None
        while parent is not None and len(parents) < 3:
            parents.append(f"{parent['name']} ({parent['code']})")
            parent = by_id.get(parent["parent_id"]) if parent["parent_id"] else None
        content = f"ICD-10-CM {node['code']}: {node['name']}."
        if node["synonyms"]:
            content += " Includes: " + "; ".join(node["synonyms"]) + "."
        if parents:
            content += " Within: " + " < ".join(parents) + "."
        body = {
            "task": _short(node["name"], 200),
            "content": content,
            "types": ["definition"],
            "tags": {"kind": "icd10cm", "code": node["code"], "domain": "medicine"},
            "source": {"name": "ICD-10-CM 2026", "category": "book"},
            "score": 3,
        }
        out.append(Item(body, 0, "icd"))
    return out


def assign(items: list[Item], rng: random.Random) -> None:
    """Writer, scope and varied types for every item of the mixed corpus."""
    for item in items:
        item.writer = rng.randrange(N_USERS)
        item.body["scopes"] = [pick_scope(item.writer, rng)]
        if item.kind == "turn":
            item.body["types"] = rng.choice([["usecase"], ["strategy"], ["usecase", "plan"]])
        elif item.kind == "icd" and rng.random() < 0.3:
            item.body["types"] = ["definition", rng.choice(EXTRA_TYPES)]


def build_corpus(
    convs: list[dict[str, Any]], nodes: list[dict[str, Any]], n: int, seed: int
) -> list[Item]:
    """All LoCoMo observations and turns plus ICD codes up to ``n`` items, shuffled

    (for ``n`` under twice the LoCoMo items, a random half of ``n`` from LoCoMo; beyond the
    ~102k real items, copy ``k`` of each gets the token ``copy{k}`` in its task, with a
    fresh writer and scope).
    """
    rng = random.Random(seed)
    items = locomo_items(convs, observations=True, turns=True)
    if n < 2 * len(items):  # small smoke corpora: half LoCoMo, half ICD-10-CM
        items = rng.sample(items, n // 2)
    items += icd_items(nodes, max(0, n - len(items)))
    base = len(items)
    copy = 1
    while len(items) < n:  # beyond the real corpus (~102k): repeat it, as index_bench does
        for item in items[:base]:
            if len(items) >= n:
                break
            body = {**item.body, "task": f"{item.body['task']} copy{copy}",
                    "tags": dict(item.body.get("tags", {}))}
            items.append(Item(body, 0, item.kind, item.conv))
        copy += 1
    items = items[:n]
    assign(items, rng)
    rng.shuffle(items)
    return items


def latency_queries(
    convs: list[dict[str, Any]], nodes: list[dict[str, Any]], n: int, seed: int
) -> list[str]:
    """Half LoCoMo questions, half ICD-10-CM inclusion terms (other wording than the task)."""
    rng = random.Random(seed + 1)
    questions = [q["question"] for c in convs for q in c["qa"] if 1 <= q["category"] <= 4]
    terms = [s for node in nodes for s in node["synonyms"] if len(s) > 8]
    half = n // 2
    return rng.sample(questions, min(half, len(questions))) + rng.sample(terms, n - half)


def quality_questions(convs: list[dict[str, Any]]) -> list[tuple[str, str, int, list[str]]]:
    """``(conversation, question, category, evidence dia_ids)`` for categories 1-4."""
    return [
        (c["sample_id"], q["question"], q["category"], q["evidence"])
        for c in convs
        for q in c["qa"]
        if 1 <= q["category"] <= 4 and q["evidence"] and q["question"].strip()
    ]


__all__ = [
    "N_USERS",
    "Item",
    "all_seeing_principal",
    "build_corpus",
    "latency_queries",
    "locomo_items",
    "memberships",
    "quality_questions",
    "user_id",
    "user_principal",
]

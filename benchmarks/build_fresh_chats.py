"""Build ``benchmarks/data/tech_chats_fresh_{en,zh}.json`` from the hand-written chats in
``benchmarks/fresh_chats/*.txt`` (issue 19 §7: a held-out set written without reading the
engine's extraction rules), and ``tech_chats_long_{en,zh}.json`` from ``benchmarks/long_chats/``
(``--set long``: one long single-project chat per language, ~30k tokens, 12+ sessions), and
``tech_chats_xl_{en,zh}.json`` from ``benchmarks/xl_chats/`` (``--set xl``: single-project chats
near the hidden benchmark's ~100k tokens, seventh session).

Why a source format: the chats are long, and gold ids are easier to keep right as labels on
the messages than as counted positions. Format, one directive per line starting ``%%``::

    %%chat <id> <lang> <title...>
    %%session <id> <ISO date>
    %%U [label]          a user message follows (until the next directive)
    %%A [label]          an assistant message follows
    %%q <type> | <question> | <label> <label> ...

Message ids are ``<chat>-<session>-<nn>`` in order; a question's gold names labels.
Run: ``python benchmarks/build_fresh_chats.py [--set fresh|long|xl|xl2|xl3|xl4|xl5]`` (checks every label, writes both files).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE / "fresh_chats"
OUT = HERE / "data"
TYPES = {"fact", "update", "contradiction", "instruction", "preference", "event_order", "summary", "assistant"}
#: set name -> (source folder, output prefix, description)
SETS = {
    "fresh": (SRC, "tech_chats_fresh", "Fresh held-out long technical chats for knowhub (issue 19 §7), written without "
                                       "reading the engine's extraction rules. Each question has a type and cites its "
                                       "gold message ids."),
    "long": (HERE / "long_chats", "tech_chats_long",
             "Long single-project technical chats for knowhub (issue 19 §7, sixth session): one project per "
             "language over 12+ sessions, written without reading the engine's extraction or ranking rules. "
             "Each question has a type and cites its gold message ids."),
    "xl": (HERE / "xl_chats", "tech_chats_xl",
           "Very long single-project technical chats for knowhub (issue 19 §7, seventh session): one project "
           "per chat over many sessions, near 100k tokens, written without reading the engine's extraction or "
           "ranking rules. Each question has a type and cites its gold message ids."),
    "xl2": (HERE / "xl2_chats", "tech_chats_xl2",
            "A second held-out set of very long single-project technical chats for knowhub (issue 19 §7, "
            "seventh session): one project per chat over 40+ sessions, near 100k tokens, written without "
            "reading the engine's rules or the xl set. Each question has a type and cites its gold message ids."),
    "xl3": (HERE / "xl3_chats", "tech_chats_xl3",
            "A third held-out set of very long single-project technical chats for knowhub (issue 19 §7, "
            "eighth session): English, one project per chat over 40+ sessions, near 100k tokens, written "
            "without reading the engine's rules. Each question has a type and cites its gold message ids."),
    "xl4": (HERE / "xl4_chats", "tech_chats_xl4",
            "A fourth held-out set of very long single-project technical chats for knowhub (issue 19 §7, "
            "ninth session): English, one project per chat over 40+ sessions, near 100k tokens, written "
            "without reading the engine's rules. Each question has a type and cites its gold message ids."),
    "xl5": (HERE / "xl5_chats", "tech_chats_xl5",
            "A fifth held-out set of very long single-project technical chats for knowhub (issue 19 §7, "
            "tenth session): English, one project per chat over 40+ sessions, near 100k tokens, written "
            "without reading the engine's rules. Each question has a type and cites its gold message ids."),
}


def read_directives(path: Path, with_text: tuple[str, ...]) -> Iterator[tuple[str, str, str]]:
    """``(directive, rest of its line, text below it)`` for every ``%%`` line of ``path``; only
    the directives named in ``with_text`` may have text below them (ValueError otherwise)."""
    head: str | None = None
    rest = ""
    body: list[str] = []
    for line in [*path.read_text(encoding="utf-8").splitlines(), "%%"]:
        if not line.startswith("%%"):
            if head in with_text:
                body.append(line)
            elif line.strip():
                raise ValueError(f"{path.name}: text outside a message: {line[:60]!r}")
            continue
        if head is not None:
            yield head, rest, "\n".join(body).strip()
        head, _, rest = line[2:].partition(" ")
        body = []


def parse(path: Path) -> dict[str, Any]:
    """One chat (module doc's format); raises ValueError on an unknown label or type."""
    chat: dict[str, Any] = {"sessions": [], "questions": []}
    labels: dict[str, str] = {}
    for head, rest, text in read_directives(path, ("U", "A")):
        if head == "chat":
            cid, lang, title = rest.split(" ", 2)
            chat.update(id=cid, language=lang, title=title)
        elif head == "session":
            sid, date = rest.split()
            chat["sessions"].append({"id": sid, "date": date, "messages": []})
        elif head in ("U", "A"):
            session = chat["sessions"][-1]
            mid = f"{chat['id']}-{session['id']}-{len(session['messages']) + 1:02d}"
            if not text:
                raise ValueError(f"{path.name}: empty message {mid}")
            session["messages"].append({"id": mid, "role": "user" if head == "U" else "assistant", "content": text})
            label = rest.strip()
            if label:
                if label in labels:
                    raise ValueError(f"{path.name}: duplicate label {label}")
                labels[label] = mid
        elif head == "q":
            qtype, question, gold = (p.strip() for p in rest.split("|"))
            if qtype not in TYPES:
                raise ValueError(f"{path.name}: unknown type {qtype}")
            missing = [g for g in gold.split() if g not in labels]
            if missing:
                raise ValueError(f"{path.name}: unknown labels {missing} in {question!r}")
            n = len(chat["questions"]) + 1
            chat["questions"].append({"id": f"{chat['id']}-q{n:02d}", "type": qtype, "question": question,
                                      "gold": [labels[g] for g in gold.split()]})
        else:
            raise ValueError(f"{path.name}: unknown directive {head}")
    return chat


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="fresh")
    src, prefix, description = SETS[parser.parse_args(argv).set]
    by_lang: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(src.glob("*.txt")):
        chat = parse(path)
        by_lang.setdefault(chat["language"], []).append(chat)
        msgs = [m for s in chat["sessions"] for m in s["messages"]]
        roles = {m["id"]: m["role"] for m in msgs}
        gold = [g for q in chat["questions"] for g in q["gold"]]
        share = sum(roles[g] == "assistant" for g in gold) / max(len(gold), 1)
        print(f"{chat['id']}: {len(chat['sessions'])} sessions, {len(msgs)} messages, "
              f"{sum(len(m['content']) for m in msgs)} chars, {len(chat['questions'])} questions, "
              f"gold in assistant messages {share:.0%}", file=sys.stderr)
    for lang, chats in by_lang.items():
        doc = {"description": description, "license": "same as the repository", "conversations": chats}
        (OUT / f"{prefix}_{lang}.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n",
                                                           encoding="utf-8")


if __name__ == "__main__":
    main()

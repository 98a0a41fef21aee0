"""Build ``benchmarks/data/social_chats.json`` from the hand-written conversations in
``benchmarks/social_chats/*.txt``: long casual conversations between two people over many
dated sessions, in LoCoMo's JSON layout, so every LoCoMo runner reads them with
``--data benchmarks/data/social_chats.json`` (issue 19 §7: data we wrote ourselves, to
check rules chosen on the five LoCoMo dev conversations on conversations they were not
chosen on; LoCoMo's own text is never copied here).

Source format, one directive per line starting ``%%``::

    %%conv <id> <speaker A> <speaker B>        (speaker names without spaces)
    %%session <n> <date time, free text, e.g. 1:56 pm on 8 May, 2023>
    %%T <speaker> [label]                      a turn follows (until the next directive)
    %%q <category> | <question> | <answer> | <label> <label> ...

Categories as LoCoMo's: 1 multi-hop, 2 temporal, 3 open-domain (inference from what was
said), 4 single-hop. Turn ids are ``D<session>:<n>``; a question's evidence names labels.

Run: ``python benchmarks/build_social_chats.py`` (checks every label, writes the file);
``--set c`` builds ``social_chats_c.json`` from ``benchmarks/social_chats_c/`` instead (a third
set, tenth session, written as held-out data for rules chosen on LoCoMo and sets A/B).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from build_fresh_chats import read_directives

HERE = Path(__file__).resolve().parent
#: set name -> (source folder, output file)
SETS = {
    "ab": (HERE / "social_chats", HERE / "data" / "social_chats.json"),
    "c": (HERE / "social_chats_c", HERE / "data" / "social_chats_c.json"),
}
CATEGORIES = {1, 2, 3, 4}


def parse(path: Path) -> dict[str, Any]:
    """One conversation in LoCoMo's layout; raises ValueError on a bad directive or label."""
    conversation: dict[str, Any] = {}
    qa: list[dict[str, Any]] = []
    labels: dict[str, str] = {}
    speakers: tuple[str, str] | None = None
    sample_id = path.stem
    session: list[dict[str, Any]] | None = None
    session_no = 0
    for head, rest, text in read_directives(path, ("T",)):
        if head == "conv":
            sample_id, a, b = rest.split()
            speakers = (a, b)
            conversation.update(speaker_a=a, speaker_b=b)
        elif head == "session":
            number, date = rest.split(" ", 1)
            session_no = int(number)
            if f"session_{session_no}" in conversation:
                raise ValueError(f"{path.name}: session {session_no} twice")
            session = conversation[f"session_{session_no}"] = []
            conversation[f"session_{session_no}_date_time"] = date.strip()
        elif head == "T":
            if session is None or speakers is None:
                raise ValueError(f"{path.name}: a turn before %%conv / %%session")
            speaker, _, label = rest.strip().partition(" ")
            if speaker not in speakers:
                raise ValueError(f"{path.name}: unknown speaker {speaker!r}")
            dia_id = f"D{session_no}:{len(session) + 1}"
            if not text:
                raise ValueError(f"{path.name}: empty turn {dia_id}")
            session.append({"speaker": speaker, "dia_id": dia_id, "text": text})
            label = label.strip()
            if label:
                if label in labels:
                    raise ValueError(f"{path.name}: duplicate label {label}")
                labels[label] = dia_id
        elif head == "q":
            category, question, answer, gold = (p.strip() for p in rest.split("|"))
            if int(category) not in CATEGORIES:
                raise ValueError(f"{path.name}: unknown category {category}")
            missing = [g for g in gold.split() if g not in labels]
            if missing or not gold.split():
                raise ValueError(f"{path.name}: unknown or no labels {missing} in {question!r}")
            qa.append({"question": question, "answer": answer, "category": int(category),
                       "evidence": [labels[g] for g in gold.split()]})
        else:
            raise ValueError(f"{path.name}: unknown directive {head}")
    return {"sample_id": sample_id, "conversation": conversation, "qa": qa}


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="ab", help="which conversations (default: sets A and B)")
    src, out = SETS[parser.parse_args(argv).set]
    convs = [parse(path) for path in sorted(src.glob("*.txt"))]
    for conv in convs:
        turns = [t for k, v in conv["conversation"].items() if k.startswith("session_") and isinstance(v, list)
                 for t in v]
        cats = {c: sum(q["category"] == c for q in conv["qa"]) for c in sorted(CATEGORIES)}
        print(f"{conv['sample_id']}: {sum(1 for k in conv['conversation'] if k.endswith('_date_time'))} sessions, "
              f"{len(turns)} turns, {sum(len(t['text']) for t in turns)} chars, {len(conv['qa'])} questions {cats}",
              file=sys.stderr)
    out.write_text(json.dumps(convs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

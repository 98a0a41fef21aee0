"""The source formats of our hand-written chats (benchmarks/build_fresh_chats.py and
build_social_chats.py): labels become ids, and a malformed file is refused, never half read."""

from __future__ import annotations

from pathlib import Path

import pytest

from .bench_modules import load_benchmark

fresh = load_benchmark("build_fresh_chats.py")
social = load_benchmark("build_social_chats.py")

TECH = """%%chat en-t en A tiny chat
%%session s1 2026-03-02T09:00:00+00:00
%%U ask
We use PostgreSQL.
It is version 16.
%%A
Good choice.
%%q fact | Which database? | ask
"""

SOCIAL = """%%conv so-1 Mia Tom
%%session 1 1:56 pm on 8 May, 2023
%%T Mia dog
I adopted a beagle called Pip.
%%T Tom
Lovely!
%%q 4 | What breed is Mia's dog? | beagle | dog
"""


def test_labels_become_message_ids(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text(TECH, encoding="utf-8")
    chat = fresh.parse(tmp_path / "t.txt")
    messages = chat["sessions"][0]["messages"]
    assert [m["id"] for m in messages] == ["en-t-s1-01", "en-t-s1-02"]
    assert messages[0]["content"] == "We use PostgreSQL.\nIt is version 16." and messages[1]["role"] == "assistant"
    assert chat["questions"] == [{"id": "en-t-q01", "type": "fact", "question": "Which database?",
                                  "gold": ["en-t-s1-01"]}]
    (tmp_path / "s.txt").write_text(SOCIAL, encoding="utf-8")
    conv = social.parse(tmp_path / "s.txt")
    assert conv["conversation"]["session_1"][0] == {"speaker": "Mia", "dia_id": "D1:1",
                                                    "text": "I adopted a beagle called Pip."}
    assert conv["qa"][0]["evidence"] == ["D1:1"] and conv["qa"][0]["category"] == 4


@pytest.mark.parametrize(("module", "text", "error"), [
    ("fresh", TECH.replace("%%q fact | Which database? | ask", "%%q fact | Which database? | nope"), "unknown labels"),
    ("fresh", TECH.replace("%%session s1 2026-03-02T09:00:00+00:00", "%%session s1 2026-03-02\nstray text"),
     "text outside a message"),
    ("fresh", TECH.replace("Good choice.", ""), "empty message"),
    ("social", SOCIAL.replace("%%T Tom", "%%T Ann"), "unknown speaker"),
    ("social", SOCIAL.replace("%%q 4 |", "%%q 9 |"), "unknown category"),
    ("social", SOCIAL + "%%T Mia dog\nAgain.\n", "duplicate label"),
])
def test_a_malformed_file_is_refused(tmp_path: Path, module: str, text: str, error: str) -> None:
    (tmp_path / "x.txt").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=error):
        (fresh if module == "fresh" else social).parse(tmp_path / "x.txt")

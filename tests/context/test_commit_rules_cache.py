"""The commit path's rule caches and faster patterns change no result (issue 19 §6)."""

from __future__ import annotations

import pytest

from knowhub.context.commit import slots
from knowhub.providers.llm.local_context_profile import profile_facts
from knowhub.providers.llm.local_context_text import split_sentences


@pytest.mark.parametrize(("text", "want"), [
    # what the per-character pattern gave before the possessive runs (edge cases included)
    ("see Node.js\nfoo", ["see Node.", "foo"]),
    ("Dr. Smith went home. Then left!", ["Dr. Smith went home.", "Then left!"]),
    ("We use e.g. package.json here.\nNext line", ["We use e.g. package.json here.", "Next line"]),
    ("我们改用Vue了。其实不对！好吗？", ["我们改用Vue了。", "其实不对！", "好吗？"]),
    ("trailing.\n", ["trailing."]),
    ("Edit config.yaml\n", ["Edit config.yaml"]),
])
def test_sentences(text: str, want: list[str]) -> None:
    assert split_sentences(text) == want
    got = split_sentences(text)
    got.append("x")  # a caller's list: the cached sentences are unchanged
    assert split_sentences(text) == want


def test_claims_follow_the_choice_window_and_are_not_shared() -> None:
    text = "We switched our main store to PostgreSQL last week."
    claims = slots.claims_in_text(text)
    assert [(c.slot, c.value, c.cue) for c in claims] == [("user|database", "PostgreSQL", "change")]
    claims.clear()
    assert slots.claims_in_text(text)
    saved = slots.CHOICE_WINDOW
    try:
        slots.CHOICE_WINDOW = 0  # "switched" is then too far from the value: no claim
        assert slots.claims_in_text(text) == []
    finally:
        slots.CHOICE_WINDOW = saved
    assert slots.claims_in_text(text)
    assert slots.claims_in_text("The weather was lovely and we walked for hours.") == []
    assert [c.value for c in slots.claims_in_text("我们改用 Vue 了。")] == ["Vue"]


def test_profile_facts_cached_copies() -> None:
    facts = profile_facts("I live in Lisbon.", False)
    assert ("residence", "Lisbon", False) in facts
    facts.clear()
    assert profile_facts("I live in Lisbon.", False)
    assert profile_facts("I might live in Lisbon one day.", False) == []  # a wish, not a fact

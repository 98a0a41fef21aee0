"""review9: reading names in one long clause-rich message takes linear time (a 28,000-character
"Alpha: Alpha: …" message took 16 s of CPU in extraction: the clause-start and preposition
patterns, anchored at the end, were searched over everything before each name)."""

from __future__ import annotations

import time

from knowhub.providers.llm.local_context_names import name_context, names_in


def test_names_in_a_long_clause_rich_sentence_take_linear_time() -> None:
    sentence = "Alpha: " * 4000
    started = time.process_time()
    names_in(sentence, set(), name_context([sentence]))
    assert time.process_time() - started < 3.0

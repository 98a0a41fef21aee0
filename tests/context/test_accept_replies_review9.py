"""review9 (on accept9): a yes word before a refusal accepts nothing ("好的，不换了", "ok, no
need"), and a digit or letter opening a sentence about something else picks no option
("1 sec, checking", "2 questions first", "A shame really.")."""

from __future__ import annotations

import pytest

from knowhub.providers.llm.local_context_accept import accepted_choice
from knowhub.providers.llm.local_context_text import Turn

UV = "I'd switch the project from Poetry to uv: it resolves and installs about ten times faster."
OPTIONS = ("Two ways to fix it:\nOption A: keep Webpack and add a persistent cache.\n"
           "Option B: move the build to Vite, which starts in under a second.")


def _pair(proposal: str, reply: str) -> tuple[Turn, Turn]:
    return (Turn("a1", "assistant", "Assistant", proposal, 1, extra={"raw": proposal}),
            Turn("u2", "user", "User", reply, 2))


@pytest.mark.parametrize(("proposal", "reply"), [
    (UV, "好的，不换了"), (UV, "行，不用了"), (UV, "ok, no need"), (UV, "ok, never mind"), (UV, "好吧，算了"),
    (OPTIONS, "1 sec, checking"), (OPTIONS, "2 questions first"), (OPTIONS, "A shame really."),
])
def test_a_refusal_or_another_sentence_accepts_nothing(proposal: str, reply: str) -> None:
    assert accepted_choice(*_pair(proposal, reply)) is None


@pytest.mark.parametrize(("reply", "option"), [("B", "2"), ("b, please", "2"), ("2.", "2"), ("A!", "1"), ("yes, option B", "2")])
def test_a_bare_pick_still_picks(reply: str, option: str) -> None:
    choice = accepted_choice(*_pair(OPTIONS, reply))
    assert choice is not None and choice.option == option

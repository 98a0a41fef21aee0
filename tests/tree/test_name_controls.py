"""A keyword name or alias with bidirectional control characters is refused on every face:
"\u202eabc" is looked up as "abc" but shown reversed, so one keyword could display as
another in the console and in the agent's candidates."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from knowhub.errors import InvalidInputError
from knowhub.server import create_app
from knowhub.tree import KeywordTree, StubLLMClient
from tests.server.server_support import Api, settings_for

SPOOFS = ["\u202eabc", "ab\u202dc", "\u2066Kubernetes\u2069", "x\u202ay"]


@pytest.mark.parametrize("text", SPOOFS)
def test_bidi_controls_are_refused_in_names_and_aliases(tmp_path: Path, text: str) -> None:
    tree = KeywordTree(tmp_path / "kt", llm_client=StubLLMClient())
    try:
        with pytest.raises(InvalidInputError, match="bidirectional"):
            tree.create_keyword(text, llm_auto_place=False)
        plain = tree.create_keyword("plain", llm_auto_place=False)
        with pytest.raises(InvalidInputError, match="bidirectional"):
            tree.add_alias(plain.id, text)
        with pytest.raises(InvalidInputError, match="bidirectional"):
            tree.update_keyword(plain.id, {"name": text})
        # the characters scripts need stay allowed (ZWNJ in Persian, ZWJ in emoji)
        assert tree.create_keyword("می\u200cخواهم", llm_auto_place=False).name == "می\u200cخواهم"
    finally:
        tree.close()


def test_http_answers_a_clear_4xx(tmp_path: Path) -> None:
    with TestClient(create_app(settings_for(tmp_path))) as client:
        answer = Api(client).as_("alice").post("/api/tree/keywords", json={"name": "\u202eabc", "auto_place": False})
        assert answer.status_code in (400, 422) and "bidirectional" in answer.text

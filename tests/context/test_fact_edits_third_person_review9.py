"""review9: a fact-node edit in the third person ("User is vegan", "User moved to Munich")
gives the value, not the verb with it ("is vegan", "moved to Munich")."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.scope import RequestContext

from .timeline_support import commit_texts

CTX = RequestContext("acme", "bob")
PROFILE = "ctx://acme/users/bob/memories/profile"


def _fact_node(svc: ContextEngineService, attribute: str):
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, PROFILE, recursive=True) if c.is_node]
    return next(n for n in nodes if n.metadata.get("fact_node") and n.metadata.get("attribute") == attribute)


def _profile_values(svc: ContextEngineService, attribute: str) -> list[str]:
    facts = svc.get_node(CTX, PROFILE).metadata["facts"]
    return [f["value"] for f in facts.values() if f["attribute"] == attribute]


@pytest.mark.parametrize(("said", "attribute", "edit", "value"), [
    ("I'm vegetarian.", "diet", "User is vegan", "vegan"),
    ("I live in Berlin.", "residence", "User moved to Munich", "Munich"),
    ("I live in Berlin.", "residence", "Bob moved to Munich last month.", "Munich"),
    ("I have a dog named Rex.", "pets", "User has a cat", "a cat"),
])
def test_a_third_person_edit_gives_the_value(svc: ContextEngineService, said: str, attribute: str, edit: str,
                                             value: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", said)
    svc.edit_node(CTX, _fact_node(svc, attribute).uri, abstract=edit)
    assert _profile_values(svc, attribute) == [value]

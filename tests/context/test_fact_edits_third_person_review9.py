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


def test_a_content_edit_without_its_heading_gives_the_value(svc: ContextEngineService) -> None:
    """review9: content "User lives in Munich" (no "# User — residence" heading) made the
    residence "User lives in Munich"."""
    commit_texts(svc, CTX, "s1", "2026-01-05", "I live in Berlin.")
    svc.edit_node(CTX, _fact_node(svc, "residence").uri, content="User lives in Munich")
    assert _profile_values(svc, "residence") == ["Munich"]


def test_a_content_edit_stating_another_attribute_is_refused(svc: ContextEngineService) -> None:
    from knowhub.errors import InvalidInputError

    commit_texts(svc, CTX, "s1", "2026-01-05", "I live in Berlin.")
    with pytest.raises(InvalidInputError, match=r"residence.*occupation"):
        svc.edit_node(CTX, _fact_node(svc, "residence").uri, content="User works as a nurse")
    assert _profile_values(svc, "residence") == ["Berlin"]


def test_a_long_content_edit_is_read_in_linear_time(svc: ContextEngineService) -> None:
    """The content's first line is read like an abstract, whose "(said …)" tail reader is
    quadratic on a 200,000-character line of "(said " (34 s): only its first 2,000 characters."""
    import time

    commit_texts(svc, CTX, "s1", "2026-01-05", "I live in Berlin.")
    started = time.process_time()
    svc.edit_node(CTX, _fact_node(svc, "residence").uri, content="(said " * 33_000)
    assert time.process_time() - started < 10

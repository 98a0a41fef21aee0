"""Editing a profile fact node changes the fact (review7: the node's text changed, the profile
kept the old value)."""

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


@pytest.mark.parametrize(("level", "text"), [
    ("abstract", "User lives in Munich"),
    ("abstract", "Bob now lives in Munich (said 2026-03-01) — profile residence"),
    ("overview", "- User — residence: Munich\n- source: I moved to Munich."),
    ("content", "# User — residence\n\nMunich\n\n> I moved to Munich. [m1]"),
])
def test_editing_a_fact_node_changes_the_fact_in_the_profile(svc: ContextEngineService, level: str, text: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "I moved to Berlin last month.")
    node = _fact_node(svc, "residence")
    assert _profile_values(svc, "residence") == ["Berlin"]
    edited = svc.edit_node(CTX, node.uri, **{level: text})
    assert edited.metadata["value"] == "Munich" and edited.metadata["fact"]["value"] == "Munich"
    assert _profile_values(svc, "residence") == ["Munich"]
    assert "Munich" in svc.get_node(CTX, PROFILE).abstract and "Berlin" not in svc.get_node(CTX, PROFILE).abstract
    again = svc.get_node(CTX, node.uri)
    assert "Munich" in again.abstract and "Munich" in again.content  # the levels not edited follow the fact
    assert getattr(again, level) == text  # the level edited is the person's text


def test_a_later_statement_is_compared_with_the_edited_value(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "I moved to Berlin last month.")
    svc.edit_node(CTX, _fact_node(svc, "residence").uri, abstract="User lives in Munich")
    commit_texts(svc, CTX, "s2", "2026-02-05", "I moved to Munich last month.")  # a restatement, no change
    assert _profile_values(svc, "residence") == ["Munich"]
    assert not svc.get_node(CTX, PROFILE).metadata.get("superseded")


def test_editing_a_chinese_fact_node(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "我在腾讯工作。")
    node = _fact_node(svc, "employer")
    svc.edit_node(CTX, node.uri, content="# User — employer\n\n阿里巴巴\n\n> 我在阿里巴巴工作。")
    assert _profile_values(svc, "employer") == ["阿里巴巴"]


def test_an_edit_that_keeps_the_value_changes_nothing_in_the_profile(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "I moved to Berlin last month.")
    before = svc.get_node(CTX, PROFILE)
    svc.edit_node(CTX, _fact_node(svc, "residence").uri, overview="- User — residence: Berlin\n- note: checked by hand")
    assert svc.get_node(CTX, PROFILE).version == before.version


@pytest.mark.parametrize("overview", ["\n" * 600 + "x", " " * 2000 + "x", "- " * 5000 + "residence"],
                         ids=["newlines", "spaces", "dashes"])
def test_reading_the_value_of_an_edited_overview_takes_linear_time(overview: str) -> None:
    """review8: the overview's value was read by a regex whose two ``\\s*`` backtracked over each
    other (a 2,000-space overview took 67 s, holding the tenant's lock)."""
    import time

    from knowhub.context.fact_edits import _from_overview

    fact = {"subject": "User", "attribute": "residence", "value": "Berlin"}
    started = time.perf_counter()
    assert _from_overview(overview, fact) == ""
    assert time.perf_counter() - started < 0.5
    assert _from_overview("- User — residence: Munich\n- source: x", fact) == "Munich"
    assert _from_overview("  residence：慕尼黑", fact) == "慕尼黑"


@pytest.mark.parametrize("abstract", ["User lives in", "—", "User lives in …"])
def test_an_edit_that_states_no_value_leaves_the_fact(svc: ContextEngineService, abstract: str) -> None:
    """review8: erasing the value ("User lives in") made the fact "lives in", and "—" a value."""
    commit_texts(svc, CTX, "s1", "2026-01-05", "I moved to Berlin last month.")
    svc.edit_node(CTX, _fact_node(svc, "residence").uri, abstract=abstract)
    assert _profile_values(svc, "residence") == ["Berlin"]


@pytest.mark.parametrize(("level", "text", "other"), [
    ("abstract", "User works as a nurse at St. Mary's", "occupation"),
    ("abstract", "User works at Google (said 2026-03-01) — profile employer", "employer"),
    ("abstract", "I work as a nurse now.", "occupation"),
    ("abstract", "I'm vegetarian", "diet"),
    ("content", "# User — occupation\n\nnurse\n\n> I work as a nurse. [m2]", "occupation"),
    ("overview", "- User — occupation: nurse\n- source: I work as a nurse.", "occupation"),
    ("abstract", "用户在阿里巴巴工作", "employer"),
])
def test_another_attributes_text_in_a_fact_node_is_refused(svc: ContextEngineService, level: str, text: str,
                                                           other: str) -> None:
    """review8 (not fixed then): a job typed into the residence fact node became the residence.
    The edit is refused (HTTP 400) and names the attribute the text states; nothing changes."""
    from knowhub.errors import InvalidInputError

    commit_texts(svc, CTX, "s1", "2026-01-05", "I moved to Berlin last month.")
    node = _fact_node(svc, "residence")
    with pytest.raises(InvalidInputError, match=rf"residence.*{other}"):
        svc.edit_node(CTX, node.uri, **{level: text})
    assert _profile_values(svc, "residence") == ["Berlin"]
    again = svc.get_node(CTX, node.uri)
    assert again.version == node.version and again.abstract == node.abstract


@pytest.mark.parametrize(("text", "value"), [
    ("I moved to Munich.", "Munich"),
    ("I live in Munich now", "Munich"),
    ("User lives in Munich and works at Siemens", "Munich"),  # its own attribute is stated: kept
])
def test_a_first_person_edit_of_the_same_attribute_takes_its_value(svc: ContextEngineService, text: str,
                                                                    value: str) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-05", "I moved to Berlin last month.")
    svc.edit_node(CTX, _fact_node(svc, "residence").uri, abstract=text)
    assert _profile_values(svc, "residence") == [value]


def test_a_fact_node_edit_of_another_attribute_through_rest_is_a_clear_400(tmp_path) -> None:
    from fastapi.testclient import TestClient

    from knowhub.server import create_app
    from tests.security.security_support import auth_header, keyed_settings

    with TestClient(create_app(keyed_settings(tmp_path))) as client:
        answer = client.post("/api/context/commit", headers=auth_header("alice"),
                             json={"messages": [{"role": "user", "content": "I moved to Berlin last month."}]})
        assert answer.status_code == 201, answer.text
        uri = next(w["uri"] for w in answer.json()["write_results"] if "/profile/" in w["uri"] and "berlin" in w["uri"])
        before = client.get("/api/context/node", headers=auth_header("alice"), params={"uri": uri}).json()
        answer = client.patch("/api/context/node", headers=auth_header("alice"),
                              json={"uri": uri, "abstract": "User works as a nurse at St. Mary's"})
        assert answer.status_code == 400, answer.text
        assert "occupation" in answer.text and "Traceback" not in answer.text
        after = client.get("/api/context/node", headers=auth_header("alice"), params={"uri": uri}).json()
        assert after["abstract"] == before["abstract"] and after["version"] == before["version"]
        answer = client.patch("/api/context/node", headers=auth_header("alice"),
                              json={"uri": uri, "abstract": "User lives in Munich"})
        assert answer.status_code == 200 and answer.json()["metadata"]["value"] == "Munich"


# review9: a fact-node edit in the third person ("User is vegan", "User moved to Munich") gives
# the value, not the verb with it ("is vegan", "moved to Munich").
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

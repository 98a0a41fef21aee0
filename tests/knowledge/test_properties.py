"""Property tests: any JSON body gives a Knowledge or an InvalidInputError, nothing else."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowhub.errors import InvalidInputError, PermissionDeniedError
from knowhub.knowledge import Knowledge, KnowledgeHub
from knowhub.knowledge.models import KNOWLEDGE_TYPES
from knowhub.scope import Principal

WHO = Principal.of("user:prop", ["team:t"])

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
field_values = st.one_of(
    json_values,
    st.sampled_from(KNOWLEDGE_TYPES),
    st.lists(st.sampled_from([*KNOWLEDGE_TYPES, "bogus"]), max_size=3),
    st.sampled_from(["user:prop", "team:t", "public", "team:other", "org:x", "user:", "bad scope"]),
    st.lists(st.sampled_from(["user:prop", "team:t", "public", "team:other", "::"]), max_size=3),
    st.integers(min_value=-1, max_value=7),
    st.text(alphabet="部署服务abc\x00\ud7ff ", max_size=20),
)
FIELDS = ["task", "content", "types", "type", "tags", "scopes", "owner", "source", "score",
          "message_id", "resource_ids", "eval", "confidence", "unknown"]
bodies = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(FIELDS), field_values, max_size=len(FIELDS)),
    st.fixed_dictionaries(
        {"task": st.text(min_size=1, max_size=20), "content": st.text(min_size=1, max_size=20),
         "types": st.lists(st.sampled_from(KNOWLEDGE_TYPES), min_size=1, max_size=3)},
        optional={k: field_values for k in ("tags", "scopes", "owner", "source", "score", "resource_ids", "eval")},
    ),
)


@pytest.fixture(scope="module")
def shared_hub() -> Iterator[KnowledgeHub]:
    with tempfile.TemporaryDirectory() as tmp, KnowledgeHub(Path(tmp) / "kh", secret_key=bytes(32)) as hub:
        yield hub


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_save_any_json(shared_hub: KnowledgeHub, body) -> None:
    try:
        saved = shared_hub.save(WHO, body)
    except (InvalidInputError, PermissionDeniedError) as exc:  # 403: public without the right
        assert exc.message
        return
    assert isinstance(saved, Knowledge)
    again = shared_hub.get(WHO, saved.id)
    answer = saved.to_dict()
    answer.pop("merged", None)  # a save merged into an earlier one says so in its answer only
    assert again.to_dict() == answer
    assert again.types and set(again.types) <= set(KNOWLEDGE_TYPES)
    assert 1 <= again.score <= 5


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(patch=json_values, rid=st.text(max_size=40))
def test_resource_bodies(shared_hub: KnowledgeHub, patch, rid) -> None:
    for call in (
        lambda: shared_hub.save_resource(WHO, patch),
        lambda: shared_hub.save_resource(WHO, {"id": rid, "body": "b", "metadata": patch}),
    ):
        try:
            result = call()
        except InvalidInputError:
            continue
        assert shared_hub.get_resource(WHO, result.id).version == result.version

"""Scopes, visibility, priority and request-context validation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowhub.errors import InvalidInputError
from knowhub.scope import (
    SCOPE_PRIORITY,
    Principal,
    RequestContext,
    best_scope_priority,
    normalize_scope,
    parse_scope,
)


def test_parse_and_normalize() -> None:
    assert parse_scope("team:t1") == ("team", "t1")
    assert parse_scope(" public ") == ("public", "")
    assert normalize_scope("org:cybertogether") == "org:cybertogether"
    assert parse_scope("user:张三") == ("user", "张三")


@pytest.mark.parametrize("bad", ["", "team", "team:", "group:x", "user:a b", "user:a/b", "user:..\\x", "x:y:z:"])
def test_invalid_scopes_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        parse_scope(bad)


def test_priority_order_of_seed_003() -> None:
    order = sorted(SCOPE_PRIORITY, key=SCOPE_PRIORITY.__getitem__)
    assert order == ["user", "project", "agent", "team", "org", "public"]
    assert best_scope_priority(["org:o", "project:p"]) == SCOPE_PRIORITY["project"]
    assert best_scope_priority([]) == SCOPE_PRIORITY["public"]


def test_visibility_comes_from_own_id_memberships_and_public() -> None:
    alice = Principal.of("user:alice", memberships=["team:t1", "org:o"])
    assert alice.visible_scopes == {"user:alice", "team:t1", "org:o", "public"}
    assert alice.can_see(["team:t1", "team:t2"])
    assert alice.can_see(["public"])
    assert not alice.can_see(["team:t2", "user:bob"])
    assert not alice.can_see([])


def test_only_owner_or_scope_admin_may_modify() -> None:
    alice = Principal.of("user:alice", memberships=["team:t1"])
    admin = Principal.of("user:root", memberships=["team:t1"], admin_of=["team:t1"])
    assert alice.can_modify("user:alice")
    assert not alice.can_modify("user:bob", ["team:t1"])  # membership alone is not enough
    assert admin.can_modify("user:bob", ["team:t1"])
    assert not admin.can_modify("user:bob", ["team:t2"])


def test_public_cannot_be_a_principal() -> None:
    with pytest.raises(InvalidInputError):
        Principal.of("public")


@given(st.text(max_size=40))
def test_request_context_ids_never_allow_path_tricks(value: str) -> None:
    try:
        ctx = RequestContext(account_id=value, user_id="u")
    except InvalidInputError:
        return
    assert ctx.account_id not in {".", ".."}
    assert not any(ch in ctx.account_id for ch in "/\\\x00:")
    assert 1 <= len(ctx.account_id) <= 128

"""Property tests: no URI, however adversarial, maps outside its account's directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowhub.context.core import ContextURI, parse_uri, slugify
from knowhub.context.fs import ContextFS
from knowhub.errors import InvalidInputError, PermissionDeniedError
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "alice", agent_id="helper")

_PIECES = [
    "..", ".", "%2e", "%2E%2e", "%2F", "%2f", "%5c", "%00", "/", "//", "\\", "\x00", "~", "$HOME",
    "．．", "。", "‥", "\u2024\u2024", "\uff0e", "\u2215", "\u2044", "\uff0f", "\u200b", "\u202e",
    "users", "alice", "bob", "agents", "helper", "resources", "memories", "content.md", ".meta.json",
    "北京", "é", "e\u0301", " ", "\n", "\t", "a", "..%2f", "%252e", "C:", "\\\\server", "?", "#",
]
_segment = st.one_of(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=4).map("".join),
    st.text(min_size=0, max_size=12),
)
_adversarial = st.lists(_segment, min_size=0, max_size=8).map(lambda segs: "ctx://acme/" + "/".join(segs))


def _inside(path: Path, base: Path) -> bool:
    return path == base or path.is_relative_to(base)


@pytest.fixture(scope="module")
def fuzz_fs(tmp_path_factory: pytest.TempPathFactory) -> ContextFS:
    return ContextFS(tmp_path_factory.mktemp("fuzz") / "data")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(uri=st.one_of(_adversarial, st.text(max_size=60), st.text(max_size=40).map(lambda t: "ctx://" + t)))
def test_no_uri_escapes_the_account_directory(fuzz_fs: ContextFS, uri: str) -> None:
    base = (fuzz_fs.accounts_dir / "acme").resolve()
    try:
        path = Path(fuzz_fs.resolve_path(CTX, uri))
    except (InvalidInputError, PermissionDeniedError):
        return
    real = Path(os.path.realpath(path))
    assert _inside(real, base)
    parsed = parse_uri(uri)
    # a URI that parses is canonical: one URI, one directory
    assert parsed.uri == uri
    assert all(not s.startswith(".") and "/" not in s and "\\" not in s and "%" not in s for s in parsed.segments)
    if len(parsed.segments) >= 2 and parsed.segments[0] == "users":
        assert parsed.segments[1] == "alice"


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_slugs_are_always_valid_segments(text: str) -> None:
    slug = slugify(text)
    ContextURI("acme", ("users", "alice", slug))
    assert slugify(text) == slug


@settings(max_examples=200, deadline=None)
@given(segs=st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=5))
def test_parse_is_the_inverse_of_build_for_valid_segments(segs: list[str]) -> None:
    try:
        uri = ContextURI("acme", tuple(segs))
    except InvalidInputError:
        return
    assert parse_uri(uri.uri) == uri

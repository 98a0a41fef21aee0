"""Isolation: nothing of one account or user is reachable from another — by search, read,
get, list or URI. Agent-space memories are shared only by requests with the same agent."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.errors import KnowhubError, PermissionDeniedError
from knowhub.scope import RequestContext

SECRET = "The vault code of {who} is {code}; {who} keeps the spare key under the blue flowerpot."


def messages(who: str, code: str) -> list[dict[str, str]]:
    return [
        {"role": "user", "name": who, "id": f"{who}-1", "content": SECRET.format(who=who, code=code)},
        {"role": "user", "name": who, "id": f"{who}-2", "content": f"I love jasmine tea and my dog {who}dog."},
    ]


CONTEXTS = {
    "acme/alice": RequestContext("acme", "alice", agent_id="helper"),
    "acme/bob": RequestContext("acme", "bob", agent_id="helper"),
    "globex/alice": RequestContext("globex", "alice", agent_id="helper"),
}


@pytest.fixture(scope="module")
def svc(tmp_path_factory: pytest.TempPathFactory) -> ContextEngineService:
    service = ContextEngineService(tmp_path_factory.mktemp("iso") / "ctx", durable=False)
    for i, ctx in enumerate(CONTEXTS.values()):
        service.commit_session(ctx, messages(ctx.user_id, f"{7000 + i}"), options={"session_id": "s1"})
    service.flush_index()
    yield service
    service.close()


def own_uris(svc: ContextEngineService, ctx: RequestContext) -> list[str]:
    root = f"ctx://{ctx.account_id}/users/{ctx.user_id}"
    return [s.uri for s in svc.list_children(ctx, root, recursive=True) if s.is_node]


@pytest.mark.parametrize("reader", list(CONTEXTS))
def test_search_returns_only_own_nodes(svc: ContextEngineService, reader: str) -> None:
    ctx = CONTEXTS[reader]
    for query in ("vault code spare key flowerpot", "jasmine tea dog", "alice bob", "7000 7001 7002"):
        result = svc.search_memory(ctx, query, top_k=50)
        for uri in [b.uri for b in result.blocks] + [s.uri for s in result.seed_hits]:
            assert uri.startswith(f"ctx://{ctx.account_id}/users/{ctx.user_id}/") or uri.startswith(
                f"ctx://{ctx.account_id}/agents/{ctx.agent_id}/"), uri
        text = " ".join(b.abstract for b in result.blocks)
        own_code = str(7000 + list(CONTEXTS).index(reader))
        for code in ("7000", "7001", "7002"):
            if code != own_code:
                assert code not in text


@pytest.mark.parametrize("reader", list(CONTEXTS))
@pytest.mark.parametrize("owner", list(CONTEXTS))
def test_read_get_list_other_owner_denied(svc: ContextEngineService, reader: str, owner: str) -> None:
    if reader == owner:
        return
    victim_uris = own_uris(svc, CONTEXTS[owner])
    assert victim_uris
    ctx = CONTEXTS[reader]
    for uri in victim_uris[:5]:
        with pytest.raises(PermissionDeniedError):
            svc.read_memory(ctx, uri, "L2")
        with pytest.raises(PermissionDeniedError):
            svc.get_node(ctx, uri)
        with pytest.raises(PermissionDeniedError):
            svc.list_children(ctx, uri)
        with pytest.raises(PermissionDeniedError):
            svc.search_memory(ctx, "vault", target_uri=uri)


def test_shared_containers_list_only_own(svc: ContextEngineService) -> None:
    alice = CONTEXTS["acme/alice"]
    users = svc.list_children(alice, "ctx://acme/users")
    assert [u.name for u in users] == ["alice"]
    everything = svc.list_children(alice, "ctx://acme", recursive=True)
    assert all("/users/bob" not in s.uri for s in everything)


@pytest.mark.parametrize("uri", [
    "ctx://acme/users/alice/../bob/memories",
    "ctx://acme/users/alice/%2e%2e/bob",
    "ctx://acme/users/bob",
    "ctx://acme//users/bob",
    "ctx://globex/users/alice/memories",
    "file:///etc/passwd",
    "ctx://acme/users/alice/memories/\x00",
])
def test_crafted_uris_rejected(svc: ContextEngineService, uri: str) -> None:
    alice = CONTEXTS["acme/alice"]
    for call in (lambda: svc.read_memory(alice, uri), lambda: svc.get_node(alice, uri),
                 lambda: svc.list_children(alice, uri), lambda: svc.search_memory(alice, "vault", target_uri=uri)):
        with pytest.raises(KnowhubError) as info:
            call()
        assert info.value.http_status in (400, 403, 422)


def test_agent_space_follows_agent_not_user(svc: ContextEngineService) -> None:
    """Same account, another agent: agent memories are not visible; user memories stay private."""
    stranger = RequestContext("acme", "alice", agent_id="other-agent")
    with pytest.raises(PermissionDeniedError):
        svc.list_children(stranger, "ctx://acme/agents/helper")
    result = svc.search_memory(stranger, "vault code", top_k=50)
    assert all("/agents/helper/" not in b.uri for b in result.blocks)


def test_default_contexts_never_share_an_agent_space(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Python face: two users without an agent id never meet in an agent space (issue 8 §1)."""
    from tests.context.isolation_support import chat, secrets

    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    try:
        alice, bob = RequestContext("acme", "alice"), RequestContext("acme", "bob")
        written = [w.uri for w in svc.commit_session(alice, chat("Alice"), options={"session_id": "s1"}).write_results]
        svc.flush_index()
        agent_uris = [u for u in written if "/agents/" in u]
        assert {u.split("/")[-2] for u in agent_uris} == {"tools", "patterns", "cases"}
        for query in ("salary 123456", "diary password blue notebook", "overheating fix compressed air"):
            text = repr([b.to_dict() for b in svc.search_memory(bob, query, top_k=50).blocks])
            assert not any(s in text for s in secrets("Alice")) and "/agents/" not in text, text
        assert alice.agent_id == "private-alice" and bob.agent_id == "private-bob"
        assert all(u.startswith("ctx://acme/agents/private-alice/") for u in agent_uris)
        for uri in [*agent_uris, *(u.replace("/private-alice/", "/default/") for u in agent_uris)]:
            with pytest.raises(PermissionDeniedError):
                svc.read_memory(bob, uri, "L2")
        assert [s.name for s in svc.list_children(bob, "ctx://acme/agents")] == []
        # bob's own commit of the same tool never touches alice's nodes
        before = {u: svc.get_node(alice, u).version for u in agent_uris}
        svc.commit_session(bob, chat("Alice"), options={"session_id": "s1"})
        assert {u: svc.get_node(alice, u).version for u in agent_uris} == before
    finally:
        svc.close()


def test_explicit_agent_gets_only_abstracted_experience(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Python face: naming an agent shares it, and only tool usage without raw text lands there."""
    from tests.context.isolation_support import chat, secrets

    svc = ContextEngineService(tmp_path / "ctx", durable=False)
    try:
        carol, dave = RequestContext("acme", "carol", agent_id="helper"), RequestContext("acme", "dave", agent_id="helper")
        svc.commit_session(carol, chat("Carol"), options={"session_id": "s1"})
        shared = [s.uri for s in svc.list_children(dave, "ctx://acme/agents/helper", recursive=True) if s.is_node]
        assert shared == ["ctx://acme/agents/helper/tools/lookup-salary"]
        node = svc.get_node(dave, shared[0])
        text = repr(node.to_dict())
        assert not any(s in text for s in secrets("Carol")) and "carol" not in text.lower()
        [entry] = node.metadata["provenance"]
        assert set(entry) == {"session", "user", "at"} and entry["at"].startswith("2024-05-08")
        # carol's verbatim memories are in her private space, which dave cannot reach
        mine = [s.uri for s in svc.list_children(carol, "ctx://acme/agents/private-carol", recursive=True) if s.is_node]
        assert {u.split("/")[-2] for u in mine} == {"tools", "patterns", "cases"}
        with pytest.raises(PermissionDeniedError):
            svc.list_children(dave, "ctx://acme/agents/private-carol")
    finally:
        svc.close()

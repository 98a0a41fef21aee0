"""Multi-principal isolation of /api/context over HTTP (issue 8 §1), with counted attempts.

alice (team:t1) commits a chat with a tool call, a tool result, a habit and a case. bob
(team:t1) and mallory (no scope) try to reach any of it by search, read, node, children,
URI guessing (alice's spaces, the old shared ``agents/default``, ``agents/helper``) and the
``X-Context-Agent`` header, and try to change what alice finds by committing forgeries.
carol and dave share the agent space ``helper`` through their keys' memberships: only
abstracted, provenance-carrying experience reaches it. Run with ``-s`` to see the counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from knowhub.config import Settings
from knowhub.context import ContextEngineService
from knowhub.server import create_app
from knowhub.server.routers.context import CONTEXT_ENGINE
from tests.context.isolation_support import (
    ACCOUNT,
    ATTACKERS,
    KEYS,
    MALLORY_MARK,
    OWN_FINDS,
    QUERIES,
    SECRETS,
    Tally,
    auth_keys,
    chat,
    guessed_uris,
    listing_roots,
    mallory_chat,
    secrets,
    victim_spaces,
)


def found(resp: Any) -> str:
    """What a search found (its blocks), without its echo of the attacker's own query."""
    if resp.status_code != 200:
        return str(resp.text)
    return json.dumps(resp.json()["blocks"], ensure_ascii=False)


def headers(who: str, agent: str | None = None) -> dict[str, str]:
    out = {"Authorization": f"Bearer {KEYS[who][0]}"}
    if agent:
        out["X-Context-Agent"] = agent
    return out


class Http:
    """The HTTP face as one principal sees it."""

    def __init__(self, client: TestClient, svc: ContextEngineService) -> None:
        self.client = client
        self.svc = svc

    def commit(self, who: str, messages: list[dict[str, Any]], agent: str | None = None) -> Any:
        resp = self.client.post("/api/context/commit", json={"messages": messages, "session_id": "s1"},
                                headers=headers(who, agent))
        self.svc.flush_index()
        return resp

    def get(self, who: str, path: str, agent: str | None = None, **params: Any) -> Any:
        return self.client.get(f"/api/context/{path}", params=params, headers=headers(who, agent))

    def own_uris(self, who: str) -> list[str]:
        """Every node of ``who``'s user space and agent spaces, from its own listings."""
        out: list[str] = []
        for root in (f"ctx://{ACCOUNT}/users/{who}", f"ctx://{ACCOUNT}/agents"):
            resp = self.get(who, "children", uri=root, recursive=True)
            assert resp.status_code == 200, resp.text
            out += [r["uri"] for r in resp.json()["results"] if r["is_node"]]
        return out

    def view(self, who: str) -> str:
        """What ``who`` finds: search answers and every node (levels, metadata, version)."""
        doc: dict[str, Any] = {}
        for q in QUERIES:
            blocks = self.get(who, "search", q=q, top_k=20).json()["blocks"]
            doc[f"q:{q}"] = [(b["uri"], b["abstract"]) for b in blocks]
        for uri in self.own_uris(who):
            doc[uri] = self.get(who, "node", uri=uri).json()
        return json.dumps(doc, sort_keys=True, ensure_ascii=False)


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Http]:
    tmp: Path = tmp_path_factory.mktemp("bola-http")
    settings = Settings.load(None, data_dir=tmp, auth={"keys": auth_keys()})
    svc = ContextEngineService(tmp / "ctx", durable=False)
    app = create_app(settings, engines={CONTEXT_ENGINE: svc})
    with TestClient(app) as client:
        face = Http(client, svc)
        resp = face.commit("alice", chat("Alice"))
        assert resp.status_code == 201 and resp.json()["status"] == "committed", resp.text
        yield face
    svc.close()


def _read_attempts(http: Http, tally: Tally, attacker: str, victim_uris: list[str]) -> None:
    secrets, spaces = SECRETS, (*victim_spaces("alice"), *victim_uris)
    targets = [None, f"ctx://{ACCOUNT}", f"ctx://{ACCOUNT}/users/alice", f"ctx://{ACCOUNT}/agents/private-alice",
               f"ctx://{ACCOUNT}/agents/default", f"ctx://{ACCOUNT}/agents"]
    for q in QUERIES:
        for target in targets:
            params = {"q": q, "top_k": 50, **({"target_uri": target} if target else {})}
            resp = http.get(attacker, "search", **params)
            tally.read(f"{attacker} search {q!r} in {target}", resp.status_code == 200, found(resp), secrets, spaces)
        resp = http.get(attacker, "search", q=q, categories="tools,skills,patterns,cases", top_k=50)
        tally.read(f"{attacker} search {q!r} agent categories", resp.status_code == 200, found(resp), secrets, spaces)
        for agent in ("default", "private-alice", "helper"):
            resp = http.get(attacker, "search", agent=agent, q=q)
            tally.read(f"{attacker} search as agent {agent}", False, found(resp), secrets, spaces)
    for uri in guessed_uris("alice", victim_uris):
        for path, params in (("read", {"level": "L2", "expand_relations": True, "max_relations": 50}),
                             ("read", {"level": "L0"}), ("node", {})):
            resp = http.get(attacker, path, uri=uri, **params)
            tally.read(f"{attacker} {path} {uri}", resp.status_code == 200, resp.text, secrets, spaces)
    for root in listing_roots("alice"):
        for recursive in (False, True):
            resp = http.get(attacker, "children", uri=root, recursive=recursive)
            tally.read(f"{attacker} children {root}", resp.status_code == 200, resp.text, secrets, spaces)


def _assert_alice_finds_all(http: Http) -> None:
    for query, text in OWN_FINDS.items():
        blocks = http.get("alice", "search", q=query, top_k=10).json()["blocks"]
        texts = [http.get("alice", "read", uri=b["uri"], level="L2").json().get("content_excerpt") or "" for b in blocks]
        assert any(text in t for t in texts), (query, [b["uri"] for b in blocks])
    uris = http.own_uris("alice")
    for category, text in (("tools", "123456"), ("patterns", "blue notebook"), ("cases", "compressed air")):
        nodes = [http.get("alice", "node", uri=u).json() for u in uris if u.split("/")[-2] == category]
        assert any(text in n["content"] for n in nodes), category


def test_attackers_reach_nothing_of_alice_over_http(http: Http) -> None:
    victim_uris = http.own_uris("alice")
    categories = {uri.split("/")[-2] for uri in victim_uris}
    assert {"tools", "patterns", "cases", "events"} <= categories, victim_uris
    before = http.view("alice")
    tally = Tally("HTTP")
    for attacker in ATTACKERS:
        _read_attempts(http, tally, attacker, victim_uris)
    seen = before
    for attacker in ATTACKERS:  # forgeries: same session, message ids and tool as alice's chat
        for agent in (None, "default", "private-alice"):
            resp = http.commit(attacker, mallory_chat(), agent=agent)
            assert resp.status_code in (201, 403), resp.text
            now = http.view("alice")
            tally.write(f"{attacker} commit as agent {agent}", now != seen)
            seen = now
    for attacker in ATTACKERS:  # and again, now that the attackers have memories of their own
        _read_attempts(http, tally, attacker, victim_uris)
    after = http.view("alice")
    print(f"\n{tally.line()}")
    assert tally.leaks == [], tally.leaks[:10]
    assert tally.attempts >= 300
    assert after == before and MALLORY_MARK not in after
    # nothing of alice's lies in a space anyone else may address
    assert all(uri.startswith(victim_spaces("alice")) for uri in victim_uris), victim_uris
    _assert_alice_finds_all(http)


def test_explicit_sharing_carries_provenance_and_no_raw_text(http: Http) -> None:
    for who in ("carol", "dave"):
        resp = http.commit(who, chat(who.title()))
        assert resp.status_code == 201, resp.text
    shared_root = f"ctx://{ACCOUNT}/agents/helper"
    tally = Tally("HTTP sharing")
    for reader, owner in (("dave", "carol"), ("carol", "dave")):
        owner_secrets = secrets(owner.title())
        listed = http.get(reader, "children", uri=shared_root, recursive=True)
        assert listed.status_code == 200
        nodes = [r["uri"] for r in listed.json()["results"] if r["is_node"]]
        assert nodes == [f"{shared_root}/tools/lookup-salary"]  # habits and cases are never shared
        node = http.get(reader, "node", uri=nodes[0]).json()
        provenance = node["metadata"]["provenance"]
        assert len(provenance) == 2 and {tuple(sorted(p)) for p in provenance} == {("at", "session", "user")}
        assert len({p["user"] for p in provenance}) == 2 and node["metadata"]["usage"]["count"] == 2
        assert node["metadata"]["source_refs"] == [] and node["metadata"]["speakers"] == []
        body = json.dumps(node, ensure_ascii=False)
        for word in (*secrets("Carol"), *secrets("Dave"), "carol", "Carol", "dave", "Dave", "m3", "s1"):
            assert word not in body, word
        # the other member's private space and user space stay closed
        for uri in guessed_uris(owner, http.own_uris(owner)):
            resp = http.get(reader, "read", uri=uri, level="L2")
            tally.read(f"{reader} read {uri}", resp.status_code == 200, resp.text, owner_secrets, victim_spaces(owner))
        for q in ("salary " + owner_secrets[0], "diary password " + owner_secrets[1], "fix " + owner_secrets[2]):
            resp = http.get(reader, "search", q=q, top_k=50)
            tally.read(f"{reader} search {q!r}", resp.status_code == 200, found(resp), owner_secrets, victim_spaces(owner))
    for outsider in ATTACKERS:  # no agent:helper membership: the shared space is closed too
        resp = http.get(outsider, "children", uri=shared_root)
        assert resp.status_code == 403
        tally.read(f"{outsider} children {shared_root}", False, resp.text, SECRETS, ())
    # the members still find their own verbatim memories in their private spaces
    own = http.get("carol", "search", q="diary password blue notebook").json()["blocks"]
    assert any(b["uri"].startswith(f"ctx://{ACCOUNT}/agents/private-carol/memories/patterns/") for b in own)
    print(f"\n{tally.line()}")
    assert tally.leaks == [], tally.leaks[:10]

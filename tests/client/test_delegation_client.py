"""The client's ``user_id=`` / ``with_user()`` against a real server that checks ``act_for``:
one backend key acts for alice and bob, each sees only their own knowledge and memories,
and a key without the right gets the engines' PermissionDeniedError."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from knowhub.client import KnowhubClient
from knowhub.errors import PermissionDeniedError
from tests.client.conftest import _Server, write_plain_config
from tests.e2e.server_process import ServerProcess

BACKEND = "client-deleg-backend-0123456789"
PLAIN = "client-deleg-plain-0123456789"

KEYS = f"""
[[auth.keys]]
key = "{BACKEND}"
principal = "agent:backend"
act_for = ["user:*"]

[[auth.keys]]
key = "{PLAIN}"
principal = "user:plain"
"""


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    work = tmp_path_factory.mktemp("delegated")
    server = _Server(write_plain_config(work / "knowhub.toml", work / "data", KEYS), work)
    server.start()
    yield server
    server.stop()


def test_one_backend_key_keeps_end_users_apart(keyed: ServerProcess) -> None:
    with KnowhubClient(keyed.base_url, BACKEND) as backend:
        alice = backend.with_user("alice")
        bob = KnowhubClient(keyed.base_url, BACKEND, user_id="bob")
        try:
            alice.knowledge.save({"task": "alice private deploy trick", "content": "use blue-green",
                                  "types": ["strategy"], "scopes": ["user:alice"], "score": 4})
            alice.context.commit_session([{"role": "user", "content": "My cat is called Zorblax."}])
            assert alice.request("GET", "/api/me")["principal"] == "user:alice"
            assert [h.knowledge.task for h in alice.knowledge.search("deploy trick")] == ["alice private deploy trick"]

            assert bob.knowledge.search("deploy trick") == []
            assert bob.knowledge.list() == [] or all(
                "alice" not in k.task for k in bob.knowledge.list())
            assert not [b for b in bob.context.search_memory("Zorblax cat").blocks
                        if "Zorblax" in (b.abstract or "")]
        finally:
            bob.close()


def test_a_plain_key_cannot_name_a_user(keyed: ServerProcess) -> None:
    with KnowhubClient(keyed.base_url, PLAIN, user_id="alice") as impostor, \
            pytest.raises(PermissionDeniedError) as raised:
        impostor.knowledge.search("deploy trick")
    assert raised.value.http_status == 403


@pytest.mark.parametrize("transport", ["httpx", "stdlib"])
def test_a_chinese_end_user_id_reaches_the_server_intact(keyed: ServerProcess, transport: str) -> None:
    with KnowhubClient(keyed.base_url, BACKEND, transport=transport, user_id="用户甲") as client:
        assert client.request("GET", "/api/me")["principal"] == "user:用户甲"

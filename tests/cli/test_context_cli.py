"""knowhub context: commit a conversation file, then search, read, node, children, flush."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.cli_support import run, run_json

CHAT = {
    "session_id": "s1",
    "messages": [
        {"role": "user", "content": "我叫王芳,在成都做数据分析,最近在学 Rust。"},
        {"role": "assistant", "content": "你好王芳!学 Rust 进展如何?"},
        {"role": "user", "content": "My cat is called Mochi and she loves tuna."},
    ],
}


def test_commit_then_search_read_node_children(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT, ensure_ascii=False), encoding="utf-8")
    committed = run_json("context", "commit", str(chat), "-d", data, "--user", "wangfang", "--account", "acme")
    assert committed["status"] == "committed" and committed["memories"]
    assert all(uri.startswith("ctx://acme/") for uri in committed["memories"])

    found = run_json("context", "search", "Mochi tuna", "-d", data, "--user", "wangfang", "--account", "acme", "--json")
    uris = [b["uri"] for b in found["blocks"]]
    assert uris and any("mochi" in u.lower() or "events" in u for u in uris)
    first = uris[0]
    block = run_json("context", "read", first, "-d", data, "-u", "wangfang", "--account", "acme", "-l", "L2")
    assert block["uri"] == first
    node = run_json("context", "node", first, "-d", data, "-u", "wangfang", "--account", "acme")
    assert node["uri"] == first and node["version"] >= 1
    root = "ctx://acme/users/wangfang/memories"
    listed = run_json("context", "children", root, "-d", data, "-u", "wangfang", "--account", "acme", "-r")
    assert first in [c["uri"] for c in listed]

    # another user of the account sees nothing of wangfang's
    other = run_json("context", "search", "Mochi tuna", "-d", data, "--user", "li", "--account", "acme", "--json")
    assert not [b for b in other["blocks"] if "/users/wangfang/" in b["uri"]]
    denied = run("context", "read", first, "-d", data, "-u", "li", "--account", "acme")
    assert denied.exit_code == 1 and "another user" in denied.output

    flushed = run_json("context", "flush", "-d", data)
    assert flushed["index"]["outbox"] is not None


def test_commit_rejects_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    result = run("context", "commit", str(empty), "-d", str(tmp_path / "d"))
    assert result.exit_code == 1 and "no messages" in result.output
    missing = run("context", "commit", str(tmp_path / "nope.json"), "-d", str(tmp_path / "d"))
    assert missing.exit_code != 0


def test_users_without_an_agent_never_share_one(tmp_path: Path) -> None:
    """CLI face (issue 8 §1): --user alone gives a private agent space; another user's is refused."""
    from tests.context.isolation_support import chat, secrets

    data = str(tmp_path / "d")
    chat_file = tmp_path / "alice.json"
    chat_file.write_text(json.dumps({"session_id": "s1", "messages": chat("Alice")}), encoding="utf-8")
    committed = run_json("context", "commit", str(chat_file), "-d", data, "--user", "alice")
    agent_uris = [u for u in committed["memories"] if "/agents/" in u]
    assert agent_uris and all(u.startswith("ctx://default/agents/private-alice/") for u in agent_uris)
    for query in ("salary 123456", "diary password blue notebook", "overheating compressed air"):
        found = run_json("context", "search", query, "-d", data, "--user", "bob", "--json")
        text = json.dumps(found["blocks"])
        assert not any(s in text for s in secrets("Alice")) and "/agents/" not in text, text
    denied = run("context", "read", agent_uris[0], "-d", data, "-u", "bob")
    assert denied.exit_code == 1 and "another agent" in denied.output
    refused = run("context", "search", "salary", "-d", data, "-u", "bob", "--agent", "private-alice")
    assert refused.exit_code == 1 and "private agent space" in refused.output
    mine = run_json("context", "search", "diary password blue notebook", "-d", data, "--user", "alice", "--json")
    assert any("blue notebook" in b["abstract"] for b in mine["blocks"])

"""knowhub knowledge: every command against a real hub in a temp data dir."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.cli_support import SECRET, run, run_json


def test_save_search_update_get_list_delete(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    saved = run_json("knowledge", "save", "-d", data, "--task", "Redis 连接池耗尽", "--content",
                     "Redis 连接池耗尽时调大 max_connections 并复用客户端 reuse the client", "-t", "usecase",
                     "-s", "public", "--score", "4", "--tag", "topic=redis")
    assert saved["owner"] == "user:local" and saved["scopes"] == ["public"] and saved["tags"] == {"topic": "redis"}
    hits = run_json("knowledge", "search", "Redis 连接池", "-d", data, "--json")
    assert [h["id"] for h in hits] == [saved["id"]]
    table = run("knowledge", "search", "Redis 连接池", "-d", data)
    assert table.exit_code == 0 and saved["id"] in table.stdout
    updated = run_json("knowledge", "update", saved["id"], "-d", data, "--helpful", "fixed prod outage")
    assert updated["eval"]["helpful"] == 1 and updated["version"] == 1  # a vote is not a version (issue 18 §1)
    got = run_json("knowledge", "get", saved["id"], "-d", data, "--history")
    assert got["item"]["eval"]["helpful"] == 1 and len(got["history"]) == 1
    listed = run_json("knowledge", "list", "-d", data, "--json")
    assert [k["id"] for k in listed] == [saved["id"]]
    assert run("knowledge", "delete", saved["id"], "-d", data, "--yes").exit_code == 0
    missing = run("knowledge", "get", saved["id"], "-d", data)
    assert missing.exit_code == 1 and missing.output.startswith("error:") and "not found" in missing.output
    assert "Traceback" not in missing.output


def test_principal_decides_visibility_and_rights(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    own = run_json("knowledge", "save", "-d", data, "-p", "user:alice", "--task", "alice 的偏好",
                   "--content", "alice 喜欢简短回答", "-t", "user_profile")
    assert own["scopes"] == ["user:alice"]
    hidden = run("knowledge", "get", own["id"], "-d", data, "-p", "user:bob")
    assert hidden.exit_code == 1 and "not found" in hidden.output
    team = run_json("knowledge", "save", "-d", data, "-p", "user:alice", "-m", "team:x", "--task", "team rule",
                    "--content", "deploy on tuesdays", "-s", "team:x")
    seen = run_json("knowledge", "get", team["id"], "-d", data, "-p", "user:bob", "-m", "team:x")
    assert seen["id"] == team["id"]
    denied = run("knowledge", "update", team["id"], "-d", data, "-p", "user:bob", "-m", "team:x", "--score", "1")
    assert denied.exit_code == 1 and "owner" in denied.output
    foreign = run("knowledge", "save", "-d", data, "-p", "user:bob", "--task", "t", "--content", "c", "-s", "team:y")
    assert foreign.exit_code == 1 and "scope" in foreign.output


def test_save_from_file_extract_and_slim(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    body = tmp_path / "items.json"
    body.write_text(json.dumps([
        {"task": "SQLite 锁", "content": "开启 WAL 模式并设置 busy_timeout 避免 database is locked", "types": ["usecase"]},
        {"task": "SQLite 锁问题", "content": "开启 WAL 模式并设置 busy_timeout 避免 database is locked", "types": ["usecase"]},
    ], ensure_ascii=False), encoding="utf-8")
    saved = run_json("knowledge", "save", "-d", data, "--file", str(body))
    assert len(saved) == 2
    plan = run_json("knowledge", "slim", "-d", data)
    assert plan["plan_id"] and len(plan["clusters"]) == 1
    applied = run_json("knowledge", "slim", "-d", data, "--apply", plan["plan_id"])
    assert applied["plan_id"] == plan["plan_id"]
    assert len(run_json("knowledge", "list", "-d", data, "--json")) == 1

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [
        {"role": "user", "content": "我更喜欢用 PostgreSQL 而不是 MySQL,请记住。"},
        {"role": "assistant", "content": "好的,我记住了你偏好 PostgreSQL。"},
    ]}, ensure_ascii=False), encoding="utf-8")
    extracted = run("knowledge", "extract", str(chat), "-d", data)
    assert extracted.exit_code == 0, extracted.output
    assert isinstance(json.loads(extracted.stdout), list)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    broken = run("knowledge", "extract", str(bad), "-d", data)
    assert broken.exit_code == 1 and "not valid JSON" in broken.output


def test_resource_secret_only_for_the_owner(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    secret = tmp_path / "pw.txt"
    secret.write_text(SECRET, encoding="utf-8")
    saved = run_json("knowledge", "resource", "save", "-d", data, "--id", "gw", "--title", "网关", "--body", "basic auth",
                     "--secure-body-file", str(secret), "--content-type", "credential", "-s", "public")
    assert saved["has_secure_body"] is True and "secure_body" not in saved
    plain = run_json("knowledge", "resource", "get", "gw", "-d", data)
    assert "secure_body" not in plain
    assert run_json("knowledge", "resource", "get", "gw", "-d", data, "--secure")["secure_body"] == SECRET
    other = run("knowledge", "resource", "get", "gw", "-d", data, "--secure", "-p", "user:eve")
    assert other.exit_code == 1 and SECRET not in other.output


def test_usage_errors_exit_2_and_help_has_examples(tmp_path: Path) -> None:
    result = run("knowledge", "save", "-d", str(tmp_path / "d"), "--task", "only a task")
    assert result.exit_code == 2 and "--content" in result.output
    for group in ("knowledge", "context", "admin"):
        text = run(group, "--help").output
        assert "Examples" in text, group


def test_cli_needs_the_publish_right_and_ignores_forged_counters(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    config = tmp_path / "knowhub.toml"
    config.write_text('[[auth.keys]]\nkey = "cli-olga-key-0123456789"\nprincipal = "user:olga"\n'
                      'memberships = ["org:acme"]\n\n'
                      '[[auth.keys]]\nkey = "cli-pat-key-0123456789"\nprincipal = "user:pat"\n'
                      'memberships = ["org:acme"]\npublish = ["org:acme"]\n', encoding="utf-8")
    for scope in ("public", "org:acme"):
        denied = run("knowledge", "save", "-d", data, "-c", str(config), "-p", "user:olga",
                     "--task", "t", "--content", "c", "-s", scope)
        assert denied.exit_code == 1 and "publish" in denied.output and "Traceback" not in denied.output
    pat = run_json("knowledge", "save", "-d", data, "-c", str(config), "-p", "user:pat",
                   "--task", "t", "--content", "c", "-s", "org:acme")
    assert pat["scopes"] == ["org:acme"]
    # the keyless default principal keeps publishing into public
    assert run_json("knowledge", "save", "-d", data, "--task", "t", "--content", "c", "-s", "public")["scopes"] == ["public"]
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({"task": "t", "content": "c", "types": ["tool"], "score": 4,
                                  "eval": {"helpful": 999999, "confidence": 1.0}}), encoding="utf-8")
    saved = run_json("knowledge", "save", "-d", data, "--file", str(forged))
    assert (saved["eval"]["helpful"], saved["eval"]["confidence"], saved["eval"]["score"]) == (0, 0.5, 4)

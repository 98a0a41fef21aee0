"""``knowhub hooks install|uninstall``: idempotent, reversible, never drops the user's hooks."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from knowhub.errors import InvalidInputError
from knowhub.integrations import claude_code, codex

USER_HOOK = {"type": "command", "command": "echo mine"}


def _user_settings(path: Path) -> dict:
    data = {"permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"Stop": [{"matcher": "", "hooks": [USER_HOOK]}],
                      "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}]}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return data


def test_claude_project_install_is_idempotent_and_uninstall_restores(tmp_path: Path) -> None:
    settings_path = tmp_path / ".claude" / "settings.json"
    original = _user_settings(settings_path)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    claude_code.install(tmp_path, python="/usr/bin/python3")
    once = settings_path.read_text(), (tmp_path / ".mcp.json").read_text()
    claude_code.install(tmp_path, python="/usr/bin/python3")
    assert (settings_path.read_text(), (tmp_path / ".mcp.json").read_text()) == once
    data = json.loads(once[0])
    assert set(claude_code.EVENTS) <= set(data["hooks"])
    assert USER_HOOK in data["hooks"]["Stop"][0]["hooks"]  # the user's Stop hook stays
    ours = data["hooks"]["SessionStart"][0]["hooks"][0]
    assert ours["command"] == "/usr/bin/python3 -m knowhub.cli.hook --runtime claude-code SessionStart"
    servers = json.loads(once[1])["mcpServers"]
    assert servers["other"] == {"command": "x"} and servers["knowhub"]["args"][:3] == ["-m", "knowhub.cli.app", "mcp"]

    claude_code.uninstall(tmp_path)
    assert json.loads(settings_path.read_text()) == original
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {"mcpServers": {"other": {"command": "x"}}}
    assert claude_code.uninstall(tmp_path).files == []  # nothing left to remove


def test_claude_user_install_keeps_claude_json_state(tmp_path: Path) -> None:
    (tmp_path / ".claude.json").write_text(json.dumps({"numStartups": 7, "projects": {"/x": {}}}))
    result = claude_code.install(home=tmp_path)
    assert tmp_path / ".claude" / "settings.json" in result.files
    state = json.loads((tmp_path / ".claude.json").read_text())
    assert state["numStartups"] == 7 and "knowhub" in state["mcpServers"]
    claude_code.uninstall(home=tmp_path)
    state = json.loads((tmp_path / ".claude.json").read_text())
    assert state["numStartups"] == 7 and "knowhub" not in state.get("mcpServers", {})
    assert "hooks" not in json.loads((tmp_path / ".claude" / "settings.json").read_text())


def test_someone_elses_knowhub_mcp_entry_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"knowhub": {"type": "http", "url": "https://x"}}}))
    result = claude_code.install(tmp_path)
    assert result.notes and json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["knowhub"]["url"] == "https://x"
    claude_code.uninstall(tmp_path)
    assert json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["knowhub"]["url"] == "https://x"


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": []}'])
def test_unusable_settings_are_refused_and_untouched(tmp_path: Path, content: str) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(content)
    with pytest.raises(InvalidInputError):
        claude_code.install(tmp_path)
    assert path.read_text() == content


def test_codex_install_keeps_config_and_uninstall_removes_only_ours(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('model = "o3"\n\n[mcp_servers.other]\ncommand = "other"\n')
    _user_settings(tmp_path / "hooks.json")
    codex.install(home=tmp_path, config=tmp_path / "kh.toml", python="/opt/py")
    once = config.read_text(), (tmp_path / "hooks.json").read_text()
    codex.install(home=tmp_path, config=tmp_path / "kh.toml", python="/opt/py")
    assert (config.read_text(), (tmp_path / "hooks.json").read_text()) == once
    parsed = tomllib.loads(once[0])
    assert parsed["model"] == "o3" and parsed["mcp_servers"]["other"]["command"] == "other"
    assert parsed["mcp_servers"]["knowhub"] == {"command": "/opt/py", "args": [
        "-m", "knowhub.cli.app", "mcp", "--config", str((tmp_path / "kh.toml").resolve())]}
    hooks = json.loads(once[1])["hooks"]
    assert "--runtime codex" in hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    codex.uninstall(home=tmp_path)
    assert config.read_text() == 'model = "o3"\n\n[mcp_servers.other]\ncommand = "other"\n'
    assert USER_HOOK in json.loads((tmp_path / "hooks.json").read_text())["hooks"]["Stop"][0]["hooks"]
    assert "SessionStart" not in json.loads((tmp_path / "hooks.json").read_text())["hooks"]


def test_codex_refuses_broken_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("model = \n")
    with pytest.raises(InvalidInputError):
        codex.install(home=tmp_path)
    assert (tmp_path / "config.toml").read_text() == "model = \n"

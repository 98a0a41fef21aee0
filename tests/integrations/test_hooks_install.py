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


def _cli_install(*args: str, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    from typer.testing import CliRunner

    from knowhub.cli.hooks import app

    for name in ("KNOWHUB_CONFIG", "KNOWHUB_DATA_DIR", "KNOWHUB_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(cwd)
    done = CliRunner().invoke(app, ["install", *args])
    assert done.exit_code == 0, done.output
    return done.output


def test_cli_registers_mcp_on_the_servers_data_dir_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime starts `knowhub mcp` in the project directory: without an absolute
    `--data` its tools would open a new, empty `<project>/knowhub-data`, not the store the
    hooks read through the server (the ids and URIs they inject would be "not found")."""
    served, project = tmp_path / "served", tmp_path / "webapp"
    (served / "knowhub-data").mkdir(parents=True)
    project.mkdir()
    out = _cli_install("claude-code", "--project", "--dir", str(project), cwd=served, monkeypatch=monkeypatch)
    args = json.loads((project / ".mcp.json").read_text())["mcpServers"]["knowhub"]["args"]
    assert args[args.index("--data") + 1] == str((served / "knowhub-data").resolve())
    assert f"the MCP tools open {(served / 'knowhub-data').resolve()} directly" in out
    assert "http://127.0.0.1:8765" in out and "does not exist" not in out

    # --data names it explicitly (relative to where install runs); codex gets the same
    out = _cli_install("codex", "--project", "--dir", str(project), "--data", "../served/knowhub-data",
                       cwd=project, monkeypatch=monkeypatch)
    block = tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]["knowhub"]
    assert block["args"][-2:] == ["--data", str((served / "knowhub-data").resolve())]

    # a config file's data_dir is the default; a directory not there yet is said so
    config = served / "knowhub.toml"
    config.write_text('data_dir = "elsewhere"\n', encoding="utf-8")
    out = _cli_install("claude-code", "--project", "--dir", str(project), "--config", str(config),
                       cwd=served, monkeypatch=monkeypatch)
    args = json.loads((project / ".mcp.json").read_text())["mcpServers"]["knowhub"]["args"]
    assert args[3:] == ["--config", str(config.resolve()), "--data", str((served / "elsewhere").resolve())]
    assert "(it does not exist yet)" in out

    # hooks only: no MCP server, no note
    out = _cli_install("claude-code", "--project", "--dir", str(tmp_path / "other"), "--no-mcp",
                       cwd=served, monkeypatch=monkeypatch)
    assert "MCP tools" not in out and not (tmp_path / "other" / ".mcp.json").exists()


def test_cli_note_quotes_a_data_dir_with_a_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The note's `knowhub serve --data …` is a command to paste: a path with a space is quoted."""
    import shlex

    project = tmp_path / "project"
    project.mkdir()
    out = _cli_install("codex", "--project", "--dir", str(project), "--data", "my data", cwd=tmp_path,
                       monkeypatch=monkeypatch)
    target = str((tmp_path / "my data").resolve())
    assert f"knowhub serve --data {shlex.quote(target)})" in out

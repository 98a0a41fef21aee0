"""End to end: the real Codex CLI (``codex exec``) with knowhub's hooks, fully offline.

Codex talks to a scripted Responses API server through a custom model provider in
``config.toml``; ``knowhub hooks install codex`` writes ``hooks.json`` and the MCP block
next to it, keeping the provider the test wrote. Codex runs hooks only once trusted, so the
run passes ``--dangerously-bypass-hook-trust`` (what automation is documented to do).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from knowhub.client import KnowhubClient
from tests.e2e.server_process import ALICE_KEY, ServerProcess
from tests.integrations.runtimes import base_env, knowhub_cli, require_binary
from tests.integrations.test_claude_code_e2e import wait_for
from tests.support.scripted_responses_stream import scripted_responses

MARKER = "OKAPI-17"


def test_memory_reaches_codex_and_session_is_committed(knowhub_server: ServerProcess, tmp_path: Path) -> None:
    binary = require_binary("codex", "KNOWHUB_CODEX_BIN", "@openai/codex")
    home, codex_home, project = tmp_path / "home", tmp_path / "codex-home", tmp_path / "service"
    for folder in (home, codex_home, project):
        folder.mkdir()
    with KnowhubClient(knowhub_server.base_url, ALICE_KEY) as kh:
        saved = kh.knowledge.save({"task": "Commit message style", "types": ["user_profile"],
                                   "content": f"Write commit messages in the imperative mood ({MARKER})."})
    with scripted_responses("Imperative mood, as you like it.") as model:
        (codex_home / "config.toml").write_text(
            'model = "scripted-model"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{model.base_url}"\nwire_api = "responses"\nenv_key = "SCRIPTED_KEY"\n',
            encoding="utf-8")
        env = base_env(home)
        env.update({"CODEX_HOME": str(codex_home), "SCRIPTED_KEY": "offline", "KNOWHUB_URL": knowhub_server.base_url,
                    "KNOWHUB_API_KEY": ALICE_KEY, "KNOWHUB_HOOK_STATE": str(tmp_path / "state")})
        installed = knowhub_cli("hooks", "install", "codex", "--config", str(knowhub_server.config), env=env, cwd=project)
        assert installed.returncode == 0, installed.stderr
        config = (codex_home / "config.toml").read_text()
        assert "[model_providers.scripted]" in config and "[mcp_servers.knowhub]" in config
        done = subprocess.run([binary, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
                               "My service deploys to the PANDA-3 cluster. How should I word commit messages?"],
                              cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=180, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Imperative mood" in done.stdout
        seen = model.all_text()
    assert MARKER in seen, f"the saved memory did not reach the model: {done.stderr[-2000:]}"
    assert f"knowledge:{saved.id}" in seen
    with KnowhubClient(knowhub_server.base_url, ALICE_KEY) as kh:
        commits = wait_for(lambda: [c for c in kh.context.list_commits(limit=20)
                                    if "PANDA-3" in json.dumps(c, ensure_ascii=False)])
    assert commits, "the Codex session was not committed"
    text = json.dumps(commits, ensure_ascii=False)
    assert "<environment_context>" not in text and MARKER not in text  # runtime and injected text stay out

"""knowhub inside the Codex CLI, offline: a memory saved earlier reaches the next session.

What it does, with nothing leaving 127.0.0.1:

1. starts ``knowhub serve`` on a temporary data dir (hashing embedder, one API key);
2. saves a preference for the user through :class:`knowhub.client.KnowhubClient`;
3. writes a Codex ``config.toml`` whose model provider is a scripted Responses API server
   (the one the tests use), then runs ``knowhub hooks install codex`` next to it;
4. runs the real ``codex exec`` (hooks need ``--dangerously-bypass-hook-trust`` in
   automation, or a one-time trust of the hooks in an interactive session);
5. prints what knowhub injected into the model's request, and the commit of the session
   that the Stop/SessionEnd hooks made afterwards.

Run from the repository root: ``python examples/codex/run_offline.py``. It needs the
``codex`` binary (``npm install -g @openai/codex``, or ``KNOWHUB_CODEX_BIN``). With a real
account, skip the scripted provider: install the hooks and use ``codex`` as usual.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.e2e.server_process import ALICE_KEY, ServerProcess, write_config  # noqa: E402
from tests.integrations.runtimes import base_env, find_binary, knowhub_cli  # noqa: E402
from tests.support.scripted_responses_stream import scripted_responses  # noqa: E402

from knowhub.client import KnowhubClient  # noqa: E402

PROVIDER = """model = "scripted-model"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "{url}"
wire_api = "responses"
env_key = "SCRIPTED_KEY"
"""


def main() -> int:
    binary = find_binary("codex", "KNOWHUB_CODEX_BIN")
    if binary is None:
        print("codex not found: npm install -g @openai/codex (or set KNOWHUB_CODEX_BIN)")
        return 2
    with tempfile.TemporaryDirectory(prefix="knowhub-codex-") as tmp:
        root = Path(tmp)
        config = write_config(root / "knowhub.toml", root / "data")
        with config.open("a", encoding="utf-8") as handle:
            handle.write('\n[embedding]\nprovider = "hashing"\n')
        server = ServerProcess(config, root, ["--no-sample"])
        server.start()
        try:
            with KnowhubClient(server.base_url, ALICE_KEY) as kh:
                item = kh.knowledge.save({"task": "Commit messages", "types": ["user_profile"],
                                          "content": "The user writes commit messages in the imperative mood."})
            print(f"saved {item.id}: {item.content}")

            home, codex_home, project = root / "home", root / "codex-home", root / "service"
            for folder in (home, codex_home, project):
                folder.mkdir()
            with scripted_responses("Use the imperative mood, as you prefer.") as model:
                (codex_home / "config.toml").write_text(PROVIDER.format(url=model.base_url), encoding="utf-8")
                env = base_env(home)
                env.update({"CODEX_HOME": str(codex_home), "SCRIPTED_KEY": "offline",
                            "KNOWHUB_URL": server.base_url, "KNOWHUB_API_KEY": ALICE_KEY,
                            "KNOWHUB_HOOK_STATE": str(root / "state")})
                done = knowhub_cli("hooks", "install", "codex", "--config", str(config), env=env, cwd=project)
                print(done.stdout.strip())
                run = subprocess.run([binary, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
                                      "How should I word the commit messages of this service?"],
                                     cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                     text=True, timeout=180, check=False)
                if run.returncode != 0:
                    print(run.stderr[-2000:])
                    return 1
                print(f"codex answered: {run.stdout.strip()[-200:]}")
                text = model.all_text()
            start = text.find("<knowhub-memory>")
            print("injected into the model's request:")
            print(text[start:text.find("</knowhub-memory>", start) + 17] if start >= 0 else "(nothing)")

            with KnowhubClient(server.base_url, ALICE_KEY) as kh:
                deadline = time.monotonic() + 30
                commits: list[dict[str, object]] = []
                while time.monotonic() < deadline and not commits:
                    commits = [c for c in kh.context.list_commits(limit=10) if "commit messages" in json.dumps(c)]
                    time.sleep(0.2)
            if not commits:
                print("the session was not committed")
                return 1
            archive = commits[0].get("archive") or {}
            print(f"session committed: {archive.get('archive_uri')} ({commits[0].get('status')})")  # type: ignore[union-attr]
            return 0
        finally:
            server.stop()


if __name__ == "__main__":
    os.environ.setdefault("KNOWHUB_EMBEDDING__PROVIDER", "hashing")
    sys.exit(main())

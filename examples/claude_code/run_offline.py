"""knowhub inside Claude Code, offline: a memory saved today reaches tomorrow's session.

What it does, with nothing leaving 127.0.0.1:

1. starts ``knowhub serve`` on a temporary data dir (hashing embedder, one API key);
2. saves a preference for the user through :class:`knowhub.client.KnowhubClient`;
3. runs ``knowhub hooks install claude-code --project`` in a temporary project;
4. runs the real ``claude -p`` headless against a scripted Anthropic Messages server
   (the one the tests use), so no account or network is needed;
5. prints what knowhub injected into the model's request, and the commit of the session
   that the Stop/SessionEnd hooks made afterwards.

Run from the repository root: ``python examples/claude_code/run_offline.py``. It needs the
``claude`` binary (``npm install -g @anthropic-ai/claude-code``, or ``KNOWHUB_CLAUDE_BIN``).
With a real account, skip the scripted server: install the hooks and use ``claude`` as usual.
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
from tests.support.scripted_anthropic import scripted_anthropic  # noqa: E402

from knowhub.client import KnowhubClient  # noqa: E402


def main() -> int:
    binary = find_binary("claude", "KNOWHUB_CLAUDE_BIN")
    if binary is None:
        print("claude not found: npm install -g @anthropic-ai/claude-code (or set KNOWHUB_CLAUDE_BIN)")
        return 2
    with tempfile.TemporaryDirectory(prefix="knowhub-claude-") as tmp:
        root = Path(tmp)
        config = write_config(root / "knowhub.toml", root / "data")
        with config.open("a", encoding="utf-8") as handle:
            handle.write('\n[embedding]\nprovider = "hashing"\n')
        server = ServerProcess(config, root, ["--no-sample"])
        server.start()
        try:
            with KnowhubClient(server.base_url, ALICE_KEY) as kh:
                item = kh.knowledge.save({"task": "Indentation", "types": ["user_profile"],
                                          "content": "The user indents Python with tabs, never spaces."})
            print(f"saved {item.id}: {item.content}")

            home, project = root / "home", root / "webapp"
            home.mkdir()
            project.mkdir()
            env = base_env(home)
            env.update({"KNOWHUB_URL": server.base_url, "KNOWHUB_API_KEY": ALICE_KEY,
                        "KNOWHUB_HOOK_STATE": str(root / "state")})
            done = knowhub_cli("hooks", "install", "claude-code", "--project", "--dir", str(project),
                               "--config", str(config), env=env, cwd=project)
            print(done.stdout.strip())

            with scripted_anthropic("Tabs it is, as you prefer.") as model:
                env.update({"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "sk-offline"})
                run = subprocess.run([binary, "-p", "Set up the formatter for this repo. How should I indent?",
                                      "--output-format", "json"], cwd=project, env=env, stdin=subprocess.DEVNULL,
                                     capture_output=True, text=True, timeout=120, check=False)
                if run.returncode != 0:
                    print(run.stderr[-2000:])
                    return 1
                print(f"claude answered: {json.loads(run.stdout)['result']}")
                text = model.all_text()
            start = text.find("<knowhub-memory>")
            print("injected into the model's request:")
            print(text[start:text.find("</knowhub-memory>", start) + 17] if start >= 0 else "(nothing)")

            with KnowhubClient(server.base_url, ALICE_KEY) as kh:
                deadline = time.monotonic() + 30
                commits = []
                while time.monotonic() < deadline and not commits:
                    commits = [c for c in kh.context.list_commits(limit=10) if "formatter" in json.dumps(c)]
                    time.sleep(0.2)
            if not commits:
                print("the session was not committed")
                return 1
            archive = commits[0].get("archive") or {}
            print(f"session committed: {archive.get('archive_uri')} ({commits[0].get('status')})")
            return 0
        finally:
            server.stop()


if __name__ == "__main__":
    os.environ.setdefault("KNOWHUB_EMBEDDING__PROVIDER", "hashing")
    sys.exit(main())

"""Finding and running the coding-agent CLIs (Claude Code, Codex) offline in tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

NPM_BIN = Path("/opt/npmtools/node_modules/.bin")
SRC = Path(__file__).resolve().parents[2] / "src"


def find_binary(name: str, env_var: str) -> str | None:
    """``$env_var``, else ``name`` on PATH, else the npm tools folder."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit if Path(explicit).exists() else None
    found = shutil.which(name)
    if found:
        return found
    candidate = NPM_BIN / name
    return str(candidate) if candidate.exists() else None


def require_binary(name: str, env_var: str, package: str) -> str:
    """The binary, or skip the test with one line."""
    import pytest  # here, not at the top: examples/ import this module without the dev extra

    found = find_binary(name, env_var)
    if found is None:
        pytest.skip(f"{name} not installed (npm install {package}, or set {env_var})")
    return found


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: fresh HOME, this checkout's knowhub first, no parent agent."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KNOWHUB_", "CLAUDE", "ANTHROPIC_", "OPENAI_", "CODEX_"))}
    env.update({"HOME": str(home), "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")])),
                "KNOWHUB_EMBEDDING__PROVIDER": "hashing", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "NO_COLOR": "1"})
    return env


def knowhub_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``knowhub ARGS`` from this checkout."""
    return subprocess.run([sys.executable, "-m", "knowhub.cli.app", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)

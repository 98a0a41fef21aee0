"""Helpers for the CLI tests: a data dir holding the sample in every engine, run commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from knowhub.cli.app import app
from knowhub.config import Settings
from knowhub.ops import open_engines
from knowhub.sample.sample_kb import load_sample
from knowhub.scope import RequestContext

SECRET = "username=knowhub-bot password=sample-not-a-real-secret"


def build_sample_dir(path: Path) -> Path:
    """A data dir with the sample knowledge base in tree, knowledge and context."""
    settings = Settings.load(data_dir=path)
    with open_engines(settings) as engines:
        load_sample(path, tree=engines.tree, hub=engines.knowledge, context=engines.context,
                    principal_id="user:local", context_ctx=RequestContext("default", "local"))
    return path


def copy_dir(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest


def run(*args: str, input: str | None = None) -> Result:
    """Invoke the root CLI (no config file from the environment)."""
    return CliRunner().invoke(app, list(args), input=input, env={"KNOWHUB_CONFIG": "", "COLUMNS": "200"})


def run_json(*args: str) -> Any:
    """Invoke a command that prints JSON and parse its stdout."""
    result = run(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)

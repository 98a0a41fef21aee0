"""Helpers of the attacker-style suite: a keyed app with an operator, byte searches."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from knowhub.config import Settings
from tests.server.server_support import KEYS, auth_header, settings_for

OPERATOR_KEY = "key-operator-forget-0123456789"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}


def keyed_settings(data_dir: Path, **extra: Any) -> Settings:
    """The server tests' keys plus an operator (``admin_of = ["public"]``)."""
    settings = settings_for(data_dir)
    auth = settings.auth.model_dump(mode="python")
    auth["keys"] = [*({**k, "key": k["key"].get_secret_value()} for k in auth["keys"]),
                    {"key": OPERATOR_KEY, "principal": "user:ops", "admin_of": ["public"]}]
    return Settings.load(None, data_dir=data_dir, auth=auth, **extra)


def files_containing(root: Path, needles: Iterable[bytes], skip: Iterable[str] = ()) -> dict[bytes, list[str]]:
    """``needle → files under root holding its bytes`` (``skip``: top-level names left out)."""
    wanted = list(needles)
    skipped = set(skip)
    found: dict[bytes, list[str]] = {n: [] for n in wanted}
    for dirpath, dirs, files in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir.parts and rel_dir.parts[0] in skipped:
            dirs[:] = []
            continue
        for name in files:
            path = Path(dirpath) / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            for needle in wanted:
                if needle in data:
                    found[needle].append(str(path.relative_to(root)))
    return {n: paths for n, paths in found.items() if paths}


__all__ = ["KEYS", "OPERATOR", "OPERATOR_KEY", "auth_header", "files_containing", "keyed_settings"]

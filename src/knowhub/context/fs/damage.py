"""Finding damaged node files of a ContextFS, and what to move into quarantine.

One bad node must never stop the context engine: readers that meet one (listing, reading,
the index reconcile at open) ask :func:`node_problem`, and the node's files go into the
engine's quarantine (:class:`~knowhub.storage.quarantine.Quarantine`), which turns the
directory into a plain container: its child nodes stay readable. A node whose only damage
is its ``.relations.json`` keeps its text; only that file is moved aside
(:func:`relations_problem`). :func:`check_tree` is the read-only scan behind
``ContextFS.check`` (``knowhub admin check``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from knowhub.context.core.enums import Level
from knowhub.context.core.uri import NODE_FILES
from knowhub.context.fs.files import _read_text, read_json_file
from knowhub.errors import CorruptStoreError, InvalidInputError, StorageError
from knowhub.storage.atomic import TMP_PREFIX

#: The commit marker of a node (written last).
META_FILE = ".meta.json"
RELATIONS_FILE = ".relations.json"
#: Intent of an in-place multi-file update (``[[temp name, target name], ...]``).
TXN_FILE = ".txn.json"
#: Prefixes of a new node being written and of a node being deleted.
TMP_NODE_PREFIX = ".tmp-node-"
TRASH_PREFIX = ".trash-"
LEVEL_FILES = tuple(level.filename for level in Level)


def _meta_problem(path: Path) -> str | None:
    try:
        meta = read_json_file(path / META_FILE)
    except FileNotFoundError:
        return None
    except (CorruptStoreError, StorageError, InvalidInputError) as exc:
        return str(exc)
    if not isinstance(meta, dict):
        return ".meta.json is not a JSON object"
    if not isinstance(meta.get("version"), int) or isinstance(meta.get("version"), bool):
        return ".meta.json has no integer version"
    return None


def relations_problem(path: Path) -> str | None:
    """Why ``path``'s ``.relations.json`` cannot be used; None when it can (or is absent)."""
    try:
        doc = read_json_file(path / RELATIONS_FILE)
    except FileNotFoundError:
        return None
    except (CorruptStoreError, StorageError, InvalidInputError) as exc:
        return str(exc)
    if not isinstance(doc, dict) or not isinstance(doc.get("edges"), list):
        return ".relations.json has no edge list"
    return None


def node_problem(path: Path) -> str | None:
    """Why the node in directory ``path`` cannot be served (its meta or a level file is
    unreadable); None when it can. Relations are judged apart (:func:`relations_problem`)."""
    problem = _meta_problem(path)
    if problem is not None:
        return problem
    for name in LEVEL_FILES:
        try:
            _read_text(path / name)
        except (CorruptStoreError, StorageError, InvalidInputError) as exc:
            return str(exc)
    return None


def node_files_in(path: Path) -> list[Path]:
    """The node files present in ``path`` (what a node's quarantine moves)."""
    return [path / name for name in NODE_FILES if os.path.lexists(path / name)]


def remove_uncommitted_files(path: Path) -> None:
    """Delete the level and relation files of a directory without ``.meta.json`` (an
    interrupted first write that never committed; readers never saw them). Caller holds
    the account's write lock."""
    if os.path.lexists(path / META_FILE):
        return
    for name in (*LEVEL_FILES, RELATIONS_FILE):
        with contextlib.suppress(OSError):
            os.unlink(path / name)


def check_tree(accounts_dir: Path) -> dict[str, Any]:
    """Scan every node directory below ``accounts_dir`` without writing anything.

    Reports ``nodes`` (count), ``corrupt`` (node directories that cannot be served),
    ``bad_relations`` (nodes whose ``.relations.json`` alone is unreadable),
    ``half_written`` (node files without ``.meta.json``) and ``leftovers`` (temp, trash
    and intent entries of interrupted writes).
    """
    report: dict[str, Any] = {"nodes": 0, "corrupt": [], "bad_relations": [], "half_written": [], "leftovers": 0}
    level_and_relations = set(LEVEL_FILES) | {RELATIONS_FILE}
    for root, dirs, files in os.walk(accounts_dir):
        path = Path(root)
        report["leftovers"] += sum(1 for d in dirs if d.startswith((TMP_NODE_PREFIX, TRASH_PREFIX)))
        report["leftovers"] += sum(1 for f in files if f.startswith(TMP_PREFIX) or f == TXN_FILE)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if path == accounts_dir or path.parent == accounts_dir:
            continue
        if META_FILE in files:
            report["nodes"] += 1
            if node_problem(path) is not None:
                report["corrupt"].append(str(path))
            elif relations_problem(path) is not None:
                report["bad_relations"].append(str(path))
        elif level_and_relations & set(files):
            report["half_written"].append(str(path))
    return report


__all__ = ["LEVEL_FILES", "META_FILE", "RELATIONS_FILE", "TMP_NODE_PREFIX", "TRASH_PREFIX", "TXN_FILE", "check_tree", "node_files_in", "node_problem", "relations_problem", "remove_uncommitted_files"]

"""The sample knowledge base that ``knowhub serve`` loads into an empty data directory.

Every engine gets a little bilingual (Chinese and English) content, written through the
engines' own public write APIs so that nothing here knows a storage format:

* KeywordTree: the outline of ``tree_sample.txt`` (the same one ``knowhub tree demo``
  uses, with the same ``sample`` mark so the demo reuses it) through
  ``batch_create_keywords``, and the infos of ``tree_sample_infos.txt`` through
  ``batch_create_infos`` with exact auto-linking;
* KnowledgeHub: the items of ``knowledge_sample.json`` (public, ``user:local`` and
  ``team:knowhub`` scopes) and one resource with a ``secure_body``;
* ContextEngine: the conversation of ``context_sample.json`` committed as one session and
  indexed (``flush_index``).

All or nothing across restarts: :func:`begin` writes a pending marker
(:data:`PENDING_NAME`) into the still empty data dir before any engine opens; the done
marker (:data:`MARKER_NAME`) is written only after every engine's part is durable, and only
then is the pending marker removed. A start that dies in between (kill, exception) leaves
the pending marker, and the next start loads the sample again: every step first looks for
what an earlier attempt already wrote (the tree outline and the infos by their ``sample``
mark, the knowledge items by their source, the resource by its fixed id, the conversation
by the context engine's commit id), so the finished load holds exactly one copy.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from knowhub.errors import InvalidInputError
from knowhub.scope import Principal
from knowhub.storage import atomic_write_json, ensure_dir, fsync_dir

log = logging.getLogger(__name__)

#: Marker written into the data dir once the sample is loaded.
MARKER_NAME = ".sample_loaded"
#: Marker of a sample load that started and has not finished yet.
PENDING_NAME = ".sample_pending"
#: ``source.name`` of the sample's knowledge items.
SAMPLE_SOURCE = "knowhub sample"
#: ``metadata["sample"]`` of sample keywords (shared with ``knowhub tree demo``).
TREE_SAMPLE_MARK = "knowhub-tree-demo"
#: The team scope the sample's team items live in.
SAMPLE_TEAM = "team:knowhub"
_ALIAS_SPLIT = re.compile(r"\s*[,，、]\s*")


@dataclass
class SampleReport:
    """What was loaded, per engine (all zero when the sample was already there)."""

    loaded: bool = False
    keywords: int = 0
    infos: int = 0
    knowledge: int = 0
    resources: int = 0
    context_memories: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "loaded": self.loaded,
            "keywords": self.keywords,
            "infos": self.infos,
            "knowledge": self.knowledge,
            "resources": self.resources,
            "context_memories": self.context_memories,
            **self.details,
        }


def sample_text(name: str) -> str:
    """Text of one bundled sample file."""
    return resources.files("knowhub").joinpath("sample", name).read_text(encoding="utf-8")


def sample_json(name: str) -> dict[str, Any]:
    """A bundled JSON sample file."""
    data = json.loads(sample_text(name))
    if not isinstance(data, dict):
        raise InvalidInputError(f"sample file {name} is not a JSON object")
    return data


def outline_specs(text: str) -> list[dict[str, Any]]:
    """``batch_create_keywords`` specs of an indented ``name | aliases | description``
    outline; parents come before children and are named by their spec ``id``."""
    specs: list[dict[str, Any]] = []
    stack: list[tuple[int, str]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        body = raw.strip()
        if not body or body.startswith("#"):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        cols = [c.strip() for c in body.split("|", 2)]
        if not cols[0]:
            raise InvalidInputError(f"sample outline line {lineno}: empty name")
        node_id = f"sample-{lineno:03d}"
        spec: dict[str, Any] = {
            "id": node_id,
            "name": cols[0],
            "aliases": [a for a in _ALIAS_SPLIT.split(cols[1]) if a] if len(cols) > 1 else [],
            "description": cols[2] if len(cols) > 2 else "",
            "metadata": {"sample": TREE_SAMPLE_MARK},
        }
        if stack:
            spec["parent_id"] = stack[-1][1]
        specs.append(spec)
        stack.append((indent, node_id))
    return specs


def is_loaded(data_dir: Path) -> bool:
    """True when the marker says the sample is already in ``data_dir``."""
    return (Path(data_dir) / MARKER_NAME).is_file()


def is_pending(data_dir: Path) -> bool:
    """True when a sample load started in ``data_dir`` and did not finish."""
    return (Path(data_dir) / PENDING_NAME).is_file() and not is_loaded(data_dir)


def begin(data_dir: Path) -> bool:
    """Decide, before any engine opens, whether the sample is to be loaded; True if so.

    An empty (or missing) data dir gets the pending marker now, durably, so that a load
    interrupted later is recognised; a data dir whose earlier load was interrupted is due
    again. Any other data dir holds someone's data and never gets the sample.
    """
    path = Path(data_dir)
    if is_loaded(path):
        return False
    if is_pending(path):
        log.warning("the sample load of an earlier start did not finish; finishing it now")
        return True
    if not is_empty_data_dir(path):
        return False
    ensure_dir(path)  # 0700, like every other first start (doctor checks it)
    atomic_write_json(path / PENDING_NAME, {"started": True})
    return True


def is_empty_data_dir(data_dir: Path) -> bool:
    """True for a missing data dir or one without any entry (checked before engines open)."""
    path = Path(data_dir)
    return not path.exists() or (path.is_dir() and not any(path.iterdir()))


def sample_principal(principal_id: str) -> Principal:
    """The principal that writes the sample: the default one, member of the sample team,
    with the right to publish the sample's public items (the operator loads it)."""
    return Principal.of(principal_id, ["public", SAMPLE_TEAM], [SAMPLE_TEAM], ["public"])


def load_tree(tree: Any) -> tuple[int, int]:
    """Write the sample outline and infos into a KeywordTree; returns (keywords, infos).

    Each of the two batches is one tree operation (all or nothing) and is skipped when an
    earlier attempt already wrote it."""
    written_keywords = written_infos = 0
    if not any(c.metadata.get("sample") == TREE_SAMPLE_MARK for c in tree.get_children("root")):
        written_keywords = len(tree.batch_create_keywords(outline_specs(sample_text("tree_sample.txt"))))
    if any(info.metadata.get("sample") == TREE_SAMPLE_MARK for info in tree.state.infos.values()):
        return written_keywords, written_infos
    lines = [
        line.strip()
        for line in sample_text("tree_sample_infos.txt").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    infos = tree.batch_create_infos(
        [
            {"content": line, "source": SAMPLE_SOURCE, "auto_link": True,
             "metadata": {"sample": TREE_SAMPLE_MARK}}
            for line in lines
        ]
    )
    return written_keywords, len(infos)


def load_knowledge(hub: Any, principal: Principal) -> tuple[int, int]:
    """Save the sample resources and items as ``principal``; returns (items, resources).

    Resources have fixed ids (saving one again replaces it); the items are one
    transaction, skipped when an earlier attempt already saved them."""
    data = sample_json("knowledge_sample.json")
    saved_resources = 0
    for body in data.get("resources", []):
        hub.save_resource(principal, {**body, "owner": principal.id})
        saved_resources += 1
    if any(item.source.get("name") == SAMPLE_SOURCE for item in hub.list(principal, limit=1000)):
        return 0, saved_resources
    items = [
        {**body, "source": {"name": SAMPLE_SOURCE, "category": "sample"}}
        for body in data.get("items", [])
    ]
    saved = hub.save_many(principal, items)
    return len(saved), saved_resources


def load_context(service: Any, ctx: Any) -> int:
    """Commit the sample conversation and index it; returns the memories written.

    Committing the same conversation again writes nothing (the commit id is a hash of the
    messages), so a resumed load never doubles the memories."""
    data = sample_json("context_sample.json")
    options = {k: data[k] for k in ("session_id", "session_time") if data.get(k)}
    result = service.commit_session(ctx, data["messages"], None, None, options)
    service.flush_index()
    return len(result.write_results)


def load_sample(
    data_dir: Path,
    *,
    tree: Any | None,
    hub: Any | None,
    context: Any | None,
    principal_id: str,
    context_ctx: Any | None = None,
) -> SampleReport:
    """Load the sample into every given engine, write the done marker, drop the pending one.

    Args:
        data_dir: the knowhub data dir (where the marker goes).
        tree / hub / context: open engines; None skips that engine.
        principal_id: the default principal; sample items are owned by it.
        context_ctx: the RequestContext of that principal for the context engine.
    """
    report = SampleReport()
    if is_loaded(data_dir):
        return report
    principal = sample_principal(principal_id)
    if tree is not None:
        report.keywords, report.infos = load_tree(tree)
    if hub is not None:
        report.knowledge, report.resources = load_knowledge(hub, principal)
    if context is not None and context_ctx is not None:
        report.context_memories = load_context(context, context_ctx)
    # every write above is durable when its call returns (tree change log, SQLite
    # transaction, context commit), so the done marker never claims more than the disk holds
    report.loaded = True
    atomic_write_json(Path(data_dir) / MARKER_NAME, {**report.to_dict(), "principal": principal_id})
    pending = Path(data_dir) / PENDING_NAME
    if pending.exists():
        pending.unlink()
        fsync_dir(Path(data_dir))
    log.info("sample knowledge base loaded: %s", report.to_dict())
    return report


__all__ = [
    "MARKER_NAME",
    "PENDING_NAME",
    "SAMPLE_SOURCE",
    "SAMPLE_TEAM",
    "TREE_SAMPLE_MARK",
    "SampleReport",
    "begin",
    "is_empty_data_dir",
    "is_loaded",
    "is_pending",
    "load_context",
    "load_knowledge",
    "load_sample",
    "load_tree",
    "outline_specs",
    "sample_json",
    "sample_principal",
    "sample_text",
]

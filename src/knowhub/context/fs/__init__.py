"""Primary store of the ContextEngine: directory nodes and their relation files (seed 004 §5, §10.2-10.3)."""

from __future__ import annotations

from knowhub.context.fs.context_fs import META_FILE, RELATIONS_FILE, ContextFS
from knowhub.context.fs.relations import RelationStore

__all__ = ["META_FILE", "RELATIONS_FILE", "ContextFS", "RelationStore"]

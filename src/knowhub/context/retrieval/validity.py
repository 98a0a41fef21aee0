"""Current values first: search blocks follow the timeline's links (:mod:`knowhub.context.commit.timeline`).

After assembly, :func:`follow_timeline` walks the blocks best first:

* a block whose memory was **superseded** (``superseded_by``) is marked
  ``metadata.superseded = True`` and its replacement (followed to the newest one, at most
  four links) is put right before it — moved up when it is already among the blocks and,
  with ``add_missing``, read from the primary store and added when it is not
  (``match_reason`` "replaces …");
  The assistant's answer that carried the change out (``confirmed_by`` of the
  replacement) follows the replacement — and follows a change found on its own, too;
* a block with an unsettled **contradiction** (``conflict``) keeps ``metadata.conflict``
  ``{with, slot, values, reason}`` and the other side (found, or added with
  ``add_missing``) is put right after it, so the agent sees both and can ask the user.

The answer is cut back to ``top_k``. Nothing is dropped from the store: a superseded value
stays findable and readable, only never above the value that replaced it.
"""

from __future__ import annotations

from typing import Any

from knowhub.context.core.query import RetrievedBlock
from knowhub.context.fs import ContextFS
from knowhub.context.retrieval.memory_read_service import LINK_KEYS, excerpt, link_metadata
from knowhub.errors import KnowhubError

__all__ = ["LINK_KEYS", "follow_timeline", "link_metadata"]

_MAX_CHAIN = 4
#: Place a replacement's ``confirmed_by`` (the assistant's answer that carried the change
#: out) right after it.
CONFIRMATIONS = True

def _block_of(fs: ContextFS | None, ctx: Any, uri: str, score: float, reason: str) -> RetrievedBlock | None:
    if fs is None:  # not reached: follow_timeline refuses add_missing without a store
        return None
    try:
        node = fs.read_node(ctx, uri, include_content=False)
    except KnowhubError:  # deleted, or not the caller's: the link is not followed
        return None
    meta = {"source_refs": node.source_refs, "updated_at": node.updated_at, "version": node.version,
            **link_metadata(node.metadata)}
    return RetrievedBlock(uri=node.uri, abstract=excerpt(node.abstract, 400), score=score, match_reason=reason,
                          category=node.category, metadata=meta)


def follow_timeline(blocks: list[RetrievedBlock], fs: ContextFS | None, ctx: Any, top_k: int,
                    add_missing: bool = True) -> list[RetrievedBlock]:
    """Blocks with replacements before superseded values and both sides of a contradiction
    together (see the module doc), at most ``top_k``. ``add_missing=False`` only reorders
    the blocks found (a replacement or other side that was not found is not added) and
    never reads ``fs``, which may then be None (:mod:`.value_questions` reorders so).

    Raises:
        ValueError: ``add_missing`` without a store to read the missing blocks from.
    """
    if add_missing and fs is None:
        raise ValueError("follow_timeline: add_missing needs the store")
    if not any(b.metadata.get("superseded_by") or b.metadata.get("conflict") or b.metadata.get("confirmed_by") for b in blocks):
        return blocks
    by_uri = {b.uri: b for b in blocks}
    out: list[RetrievedBlock] = []
    placed: set[str] = set()

    def place(block: RetrievedBlock) -> None:
        if block.uri in placed:
            return
        placed.add(block.uri)
        out.append(block)
        for uri in (block.metadata.get("confirmed_by") or [])[:1] if CONFIRMATIONS else []:
            confirming = by_uri.get(uri) or (_block_of(fs, ctx, uri, block.score, f"carries out {block.uri}")
                                             if add_missing else None)
            if confirming is not None:
                place(confirming)

    for block in blocks:
        if block.uri in placed:
            continue
        target = block.metadata.get("superseded_by")
        if target:
            block.metadata["superseded"] = True
            chain: list[RetrievedBlock] = []
            seen = {block.uri}
            while target and target not in seen and len(chain) < _MAX_CHAIN:
                seen.add(target)
                newer = by_uri.get(target) or (_block_of(fs, ctx, target, block.score, f"replaces {block.uri}")
                                               if add_missing else None)
                if newer is None:
                    break
                by_uri.setdefault(newer.uri, newer)
                chain.append(newer)
                target = newer.metadata.get("superseded_by")
            for newer in reversed(chain):  # the newest value first, with the answer that carried it out
                newer.score = max(newer.score, block.score)
                place(newer)
        place(block)
        conflict = block.metadata.get("conflict")
        other = conflict.get("with") if isinstance(conflict, dict) else None
        if other and other not in placed:
            side = by_uri.get(other) or (_block_of(fs, ctx, other, block.score, f"contradicts {block.uri}")
                                         if add_missing else None)
            if side is not None:
                place(side)
    return out[:top_k]

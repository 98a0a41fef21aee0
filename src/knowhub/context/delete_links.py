"""What a deleted memory leaves behind in the memories that stay (issue 19 §2/§3).

The timeline (:mod:`knowhub.context.commit.timeline`) links memories to each other
(``superseded_slots`` / ``superseded_by`` / ``superseded_at``, ``supersedes``,
``conflict``, ``confirmed_by``) and records every claim in the per-user registry; the profile node repeats
the fact of each of its fact nodes. When a person deletes a memory
(:meth:`ContextEngineService.delete_node`), nothing may keep naming or repeating it:

* **links**: a memory that was superseded by, or contradicted by, a deleted memory is
  linked to a surviving memory of the same statement instead (the event of "we switched
  to MySQL" is deleted, its ``MySQL`` entity stays), or loses the link, so the value it
  holds is current again; ``supersedes`` and ``confirmed_by`` lists drop the deleted URIs;
* **registry**: the deleted URIs leave the per-user registry; a statement with no memory
  left is dropped and the entry it had superseded is current again;
* **profile**: a deleted fact node takes its fact out of the profile node (its facts,
  superseded list and the three levels); when it was the current value, the newest value
  it had replaced comes back.

A move (:meth:`ContextEngineService.move_node`) is the gentler case: every link and
registry entry that named a moved URI names its new URI (:func:`retarget_moved`).

Only nodes of the deleting user's own space are touched, under the account write lock the
delete already holds. The rules that *write* links stay in the timeline; this module only
takes them back.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

from knowhub.context.core.uri import CtxLike, parse_uri
from knowhub.errors import KnowhubError

__all__ = ["forget_deleted", "retarget_moved", "same_fact"]

log = logging.getLogger(__name__)

#: Parts of a superseded profile value that describe its replacement, not the value.
_REPLACEMENT_KEYS = ("superseded_at", "superseded_by", "older_than_current")


def _category(uri: str) -> str:
    """The memory category of ``.../memories/{category}/...`` ("" elsewhere)."""
    parts = uri.split("/")
    return parts[parts.index("memories") + 1] if "memories" in parts[:-1] else ""


def _pick(uris: dict[str, str], category: str) -> str:
    """The memory of ``uris`` that a memory of ``category`` links to (same category first)."""
    return uris.get(category) or next(iter(uris.values()))


def forget_deleted(fs: Any, ctx: CtxLike, root: str, own: dict[str, Any]) -> list[str]:
    """Take the deleted ``root`` (and everything under it) out of the timeline links, the
    registry and the profile; ``own`` is the deleted node's metadata, read before the
    delete ({} for a directory). Returns the URIs of the nodes rewritten (their index
    copies must follow)."""
    segments = parse_uri(root).segments
    if len(segments) <= 2:  # an account or space root: nothing of that space stays
        return []
    prefix = root.rstrip("/") + "/"

    def gone(uri: Any) -> bool:
        return isinstance(uri, str) and (uri == root or uri.startswith(prefix))

    successors: dict[str, dict[str, Any]] = {}
    neighbours, survivors = _forget_in_registry(fs, ctx, gone, successors)
    neighbours |= {u for u in _linked(own) if not gone(u)}
    changed = _unlink(fs, ctx, neighbours, gone, survivors, successors)
    profile = _forget_fact(fs, ctx, root, own)
    if profile and profile not in changed:
        changed.append(profile)
    return changed


def _linked(meta: dict[str, Any]) -> set[str]:
    """Every URI a node's timeline metadata names."""
    out: set[str] = set()
    for link in (meta.get("superseded_slots") or {}).values():
        if isinstance(link, dict) and isinstance(link.get("by"), str):
            out.add(link["by"])
    out.update(u for u in meta.get("supersedes") or [] if isinstance(u, str))
    out.update(u for u in meta.get("confirmed_by") or [] if isinstance(u, str))
    if isinstance(meta.get("superseded_by"), str):
        out.add(meta["superseded_by"])
    conflict = meta.get("conflict")
    if isinstance(conflict, dict) and isinstance(conflict.get("with"), str):
        out.add(conflict["with"])
    return out


def _forget_in_registry(
    fs: Any, ctx: CtxLike, gone: Callable[[Any], bool], successors: dict[str, dict[str, Any]]
) -> tuple[set[str], dict[str, dict[str, str]]]:
    """Drop the deleted URIs from the registry. Returns the surviving memories of every slot
    the delete touched (the nodes whose links may name a deleted one) and, per deleted URI,
    the surviving memories of its statement (``{category: uri}``, maybe empty) — or, when no
    memory of it is left and a later statement had replaced it, that statement's memories
    (A → B → C, B deleted: A is replaced by C, not current again); ``successors`` gets the
    ``{at, value}`` of such a replacement per deleted URI."""
    from knowhub.context.commit.timeline import Timeline

    timeline = Timeline(fs)
    data = timeline.load(ctx)
    slots: dict[str, list[dict[str, Any]]] = data.get("slots") or {}
    neighbours: set[str] = set()
    survivors: dict[str, dict[str, str]] = {}
    touched_any = False
    for slot in list(slots):
        entries = [e for e in slots[slot] if isinstance(e, dict)]
        if not any(gone(u) for e in entries for u in [*(e.get("uris") or {}).values(), *(e.get("confirmed") or [])]):
            continue
        touched_any = True
        dead_values: set[str] = set()
        holders = {u: e for e in entries for u in (e.get("uris") or {}).values()}  # before the delete
        for entry in entries:
            uris = entry.get("uris") or {}
            alive = {c: u for c, u in uris.items() if not gone(u)}
            for uri in uris.values():
                if gone(uri):
                    survivors[uri] = alive
            neighbours.update(alive.values())
            entry["uris"] = alive
            if entry.get("confirmed"):  # the assistant's answer that carried the change out
                entry["confirmed"] = [u for u in entry["confirmed"] if not gone(u)]
                if not entry["confirmed"]:
                    entry.pop("confirmed")
            if not alive:
                dead_values.add(str(entry.get("value")))
        for entry in entries:  # a statement with no memory left hands what it replaced on to its own successor
            successor = _successor(entry, holders) if not entry["uris"] else None
            if successor is not None:
                for uri in (u for u, e in holders.items() if e is entry):
                    survivors[uri] = successor["uris"]
                    successors[uri] = {"at": successor.get("at") or "", "value": successor.get("value")}
        kept = [e for e in entries if e["uris"]]
        for entry in kept:
            by = entry.get("superseded_by")
            if gone(by):
                alive = survivors.get(str(by)) or {}
                if alive:
                    entry["superseded_by"] = next(iter(alive.values()))
                else:
                    entry.pop("superseded_by", None)  # its replacement is gone: current again
            if entry.get("conflict_with"):
                entry["conflict_with"] = [v for v in entry["conflict_with"] if v not in dead_values]
                if not entry["conflict_with"]:
                    entry.pop("conflict_with")
        if kept:
            slots[slot] = kept
        else:
            del slots[slot]
    if touched_any:
        timeline.save(ctx, data)
    return neighbours, survivors


def _successor(entry: dict[str, Any], holders: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The first statement with a memory left along ``entry``'s chain of replacements."""
    seen = {id(entry)}
    current = holders.get(str(entry.get("superseded_by")))
    while current is not None and id(current) not in seen:
        if current["uris"]:
            return current
        seen.add(id(current))
        current = holders.get(str(current.get("superseded_by")))
    return None


def _unlink(
    fs: Any, ctx: CtxLike, uris: set[str], gone: Callable[[Any], bool], survivors: dict[str, dict[str, str]],
    successors: dict[str, dict[str, Any]],
) -> list[str]:
    """Rewrite the timeline metadata of ``uris`` so that none names a deleted memory."""
    metas: dict[str, dict[str, Any]] = {}
    for uri in sorted(uris):
        try:
            metas[uri] = fs.read_metadata(ctx, uri)
        except KnowhubError as exc:  # gone, damaged or not the caller's: nothing to rewrite
            log.debug("delete: cannot read %s: %s", uri, exc)
    updated = {uri: dict(meta) for uri, meta in metas.items()}
    adopted: dict[str, list[str]] = {}  # survivor -> the memories it now supersedes
    for uri, meta in updated.items():
        category = _category(uri)
        links = meta.get("superseded_slots")
        if isinstance(links, dict) and any(isinstance(v, dict) and gone(v.get("by")) for v in links.values()):
            kept: dict[str, Any] = {}
            for slot, link in links.items():
                if not (isinstance(link, dict) and gone(link.get("by"))):
                    kept[slot] = link
                    continue
                alive = survivors.get(link["by"]) or {}
                if alive:
                    kept[slot] = {**link, **successors.get(link["by"], {}), "by": _pick(alive, category)}
                    adopted.setdefault(kept[slot]["by"], []).append(uri)
            if kept:
                meta["superseded_slots"] = kept
            else:
                meta.pop("superseded_slots")
            whole = [v for v in kept.values() if isinstance(v, dict) and not v.get("partial")]
            if whole:
                newest = max(whole, key=lambda v: str(v.get("at") or ""))
                meta["superseded_by"], meta["superseded_at"] = newest["by"], newest.get("at") or ""
            else:
                meta.pop("superseded_by", None)
                meta.pop("superseded_at", None)
        elif gone(meta.get("superseded_by")):  # a link without its slot record
            meta.pop("superseded_by")
            meta.pop("superseded_at", None)
        for key in ("supersedes", "confirmed_by"):
            if isinstance(meta.get(key), list) and any(gone(u) for u in meta[key]):
                meta[key] = [u for u in meta[key] if not gone(u)]
                if not meta[key]:
                    meta.pop(key)
        conflict = meta.get("conflict")
        if isinstance(conflict, dict) and gone(conflict.get("with")):
            alive = survivors.get(conflict["with"]) or {}
            if alive:
                meta["conflict"] = {**conflict, "with": _pick(alive, category)}
            else:
                meta.pop("conflict")
    for survivor, olds in adopted.items():
        if survivor in updated:
            meta = updated[survivor]
            meta["supersedes"] = list(dict.fromkeys([*(meta.get("supersedes") or []), *olds]))
    changed: list[str] = []
    for uri, meta in updated.items():
        if meta != metas[uri]:
            fs.write_metadata(ctx, uri, meta)
            changed.append(uri)
    return changed


def same_fact(entry: Any, fact: dict[str, Any]) -> bool:
    """Whether a profile node's fact entry is ``fact`` (subject, attribute and value)."""
    from knowhub.context.commit.policies import norm_text

    return (isinstance(entry, dict) and entry.get("attribute") == fact.get("attribute")
            and norm_text(str(entry.get("subject") or "")) == norm_text(str(fact.get("subject") or ""))
            and norm_text(str(entry.get("value") or "")) == norm_text(str(fact.get("value") or "")))


def profile_of_fact(fs: Any, ctx: CtxLike, uri: str) -> tuple[str, Any]:
    """``(URI, node)`` of the profile node a fact node at ``uri`` belongs to (node None when
    it is gone)."""
    profile_uri = uri.rsplit("/", 1)[0]
    try:
        return profile_uri, fs.read_node(ctx, profile_uri)
    except KnowhubError:
        return profile_uri, None


def rewrite_profile(fs: Any, ctx: CtxLike, node: Any, meta: dict[str, Any], superseded: list[dict[str, Any]]) -> None:
    """Write the profile ``node`` with ``meta`` (its facts) and its levels rendered again."""
    from knowhub.context.commit.policies import ProfilePolicy

    node.metadata = meta
    for level, text in ProfilePolicy.levels(meta["facts"], superseded).items():
        setattr(node, level, text)
    fs.write_node(ctx, node)


def _forget_fact(fs: Any, ctx: CtxLike, uri: str, own: dict[str, Any]) -> str | None:
    """Take a deleted fact node's fact out of its profile node; returns the profile URI when
    it changed."""
    fact = own.get("fact")
    if not own.get("fact_node") or not isinstance(fact, dict):
        return None
    from knowhub.context.commit.policies import norm_text

    profile_uri, node = profile_of_fact(fs, ctx, uri)
    if node is None:
        return None
    meta = dict(node.metadata or {})
    facts = {k: v for k, v in (meta.get("facts") or {}).items() if isinstance(v, dict)}
    original = list(meta.get("superseded") or [])
    superseded = [dict(s) for s in original if isinstance(s, dict)]
    removed = [key for key, value in facts.items() if same_fact(value, fact)]
    for key in removed:
        del facts[key]
    kept = [s for s in superseded if not same_fact(s, fact)]
    value = norm_text(str(fact.get("value") or ""))

    def replaced_by_it(entry: dict[str, Any]) -> bool:
        by = entry.get("superseded_by")
        return isinstance(by, dict) and norm_text(str(by.get("value") or "")) == value

    for key in removed:  # the value the deleted one had replaced is current again
        back = [s for s in kept if replaced_by_it(s) and s.get("attribute") == fact.get("attribute")
                and not s.get("older_than_current")]
        if back and key not in facts:
            newest = max(back, key=lambda s: str(s.get("at") or ""))
            kept.remove(newest)
            facts[key] = {k: v for k, v in newest.items() if k not in _REPLACEMENT_KEYS}
    for entry in kept:  # no superseded value names the deleted one as its replacement
        if replaced_by_it(entry):
            entry.pop("superseded_by")
    if not removed and kept == original:
        return None
    meta["facts"], meta["superseded"] = facts, kept
    rewrite_profile(fs, ctx, node, meta, kept)
    return profile_uri


def retarget_moved(fs: Any, ctx: CtxLike, src: str, dst: str) -> list[str]:
    """After ``src`` (and its subtree) moved to ``dst``: point every timeline link and
    registry entry that named a moved URI at its new URI. Returns the URIs of the nodes
    rewritten."""
    if len(parse_uri(src).segments) <= 2:
        return []
    prefix = src.rstrip("/") + "/"

    def moved(uri: Any) -> str | None:
        if isinstance(uri, str) and (uri == src or uri.startswith(prefix)):
            return dst + uri[len(src):]
        return None

    from knowhub.context.commit.timeline import Timeline

    timeline = Timeline(fs)
    data = timeline.load(ctx)
    neighbours: set[str] = set()
    touched = False
    for entries in (data.get("slots") or {}).values():
        hit = False
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            uris = entry.get("uris") or {}
            for category, uri in list(uris.items()):
                if (new := moved(uri)) is not None:
                    uris[category], hit = new, True
            if (new := moved(entry.get("superseded_by"))) is not None:
                entry["superseded_by"], hit = new, True
            if isinstance(entry.get("confirmed"), list) and any(moved(u) for u in entry["confirmed"]):
                entry["confirmed"], hit = [moved(u) or u for u in entry["confirmed"]], True
        if hit:
            touched = True
            neighbours.update(u for e in entries if isinstance(e, dict) for u in (e.get("uris") or {}).values())
    if touched:
        timeline.save(ctx, data)
    with contextlib.suppress(KnowhubError):  # a directory has no metadata
        neighbours |= _linked(fs.read_metadata(ctx, dst))  # what the moved node links to
    changed: list[str] = []
    for uri in sorted(neighbours):
        try:
            meta = fs.read_metadata(ctx, uri)
        except KnowhubError:
            continue
        new_meta = _map_links(meta, moved)
        if new_meta != meta:
            fs.write_metadata(ctx, uri, new_meta)
            changed.append(uri)
    return changed


def _map_links(meta: dict[str, Any], moved: Callable[[Any], str | None]) -> dict[str, Any]:
    """``meta`` with every timeline link that ``moved`` maps replaced by its new URI."""
    out = dict(meta)

    def new(uri: Any) -> Any:
        mapped = moved(uri)
        return uri if mapped is None else mapped

    if isinstance(out.get("superseded_slots"), dict):
        out["superseded_slots"] = {slot: ({**link, "by": new(link.get("by"))} if isinstance(link, dict) else link)
                                   for slot, link in out["superseded_slots"].items()}
    if "superseded_by" in out:
        out["superseded_by"] = new(out["superseded_by"])
    for key in ("supersedes", "confirmed_by"):
        if isinstance(out.get(key), list):
            out[key] = [new(u) for u in out[key]]
    if isinstance(out.get("conflict"), dict) and "with" in out["conflict"]:
        out["conflict"] = {**out["conflict"], "with": new(out["conflict"]["with"])}
    return out

"""In-memory state of a tree: latest entity versions and the derived maps (seed 000 §3.1).

``TreeState`` is rebuilt from the JSONL files on open and then kept in step by applying
*rows* (full after-images, newest version wins). The same ``apply_*`` functions serve the
loader, this process's own commits and the follower path that replays other processes'
change-log entries, so the three can never disagree. Tombstone versions are remembered so
that versions stay monotonic per id (undo of a delete continues the numbering).

The whole state, derived maps included, is persisted as one *state image* under
``indexes/`` (:mod:`knowhub.tree.image`) with a fingerprint of the files it reflects; an
open starts from it and replays the change-log records written after it (:meth:`replay`).
An image that does not match the files, or is damaged, is ignored and the state is
rebuilt from the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from knowhub.tree import image
from knowhub.tree.models import ROOT_ID, Info, InfoKeywordLink, KeywordNode, link_key

NodeHook = Callable[[KeywordNode | None, KeywordNode | None], None]
LinkHook = Callable[[InfoKeywordLink | None, InfoKeywordLink | None], None]
InfoHook = Callable[[Info | None, Info | None], None]

INDEX_FILES = ("inverted", "children", "info_by_kw", "kw_by_info")
#: Files of the format before the state image (one JSON file per map, and a marker).
LEGACY_INDEX_FILES = tuple(f"{name}.json" for name in INDEX_FILES)
PERSIST_MARKER = ".persisting"


#: Largest inverted bucket kept as a sorted tuple (48 bytes for one id, against about 200
#: for a one-entry dict, and faster to decode from the state image); larger ones are dicts
#: so that adding to a very common key stays O(1).
SMALL_BUCKET = 32


def bucket_add(index: dict[str, Any], key: str, node_id: str) -> None:
    """Add ``node_id`` under ``key`` of the inverted index (tuple or dict bucket)."""
    bucket = index.get(key)
    if bucket is None:
        index[key] = (node_id,)
    elif type(bucket) is tuple:
        if node_id in bucket:
            return
        if len(bucket) < SMALL_BUCKET:
            index[key] = tuple(sorted((*bucket, node_id)))
        else:
            grown = dict.fromkeys(bucket)
            grown[node_id] = None
            index[key] = grown
    else:
        bucket[node_id] = None


def bucket_remove(index: dict[str, Any], key: str, node_id: str) -> None:
    """Remove ``node_id`` from ``key`` of the inverted index; drop the key when empty."""
    bucket = index.get(key)
    if bucket is None:
        return
    if type(bucket) is tuple:
        if node_id in bucket:
            rest = tuple(i for i in bucket if i != node_id)
            if rest:
                index[key] = rest
            else:
                del index[key]
    else:
        bucket.pop(node_id, None)
        if not bucket:
            del index[key]


class TreeState:
    """Latest version of every node, info and link, plus inverted/children/link maps."""

    def __init__(self) -> None:
        self.nodes: dict[str, KeywordNode] = {}
        self.infos: dict[str, Info] = {}
        self.links: dict[str, InfoKeywordLink] = {}
        self.dead_versions: dict[tuple[str, str], int] = {}
        #: lookup key -> node ids: a sorted tuple (almost every key names one node), a
        #: dict once a key names more than SMALL_BUCKET nodes (see :func:`bucket_add`)
        self.inverted: dict[str, tuple[str, ...] | dict[str, None]] = {}
        self.children: dict[str, dict[str, None]] = {}
        self.info_by_kw: dict[str, dict[str, None]] = {}
        self.kw_by_info: dict[str, dict[str, None]] = {}
        # nodes whose ``children`` list must be refreshed from the index before handing out
        self.children_dirty: set[str] = set()
        self.node_hooks: list[NodeHook] = []
        self.info_hooks: list[InfoHook] = []
        self.link_hooks: list[LinkHook] = []

    # -- versions -----------------------------------------------------------------------

    def version_of(self, kind: str, key: str) -> int:
        """Latest known version of an entity, live or deleted; 0 when never seen."""
        live: Any
        if kind == "node":
            live = self.nodes.get(key)
        elif kind == "info":
            live = self.infos.get(key)
        else:
            live = self.links.get(key)
        if live is not None:
            return int(live.version)
        return self.dead_versions.get((kind, key), 0)

    def row_of(self, kind: str, key: str) -> dict[str, Any] | None:
        """Current live row of an entity, or None."""
        if kind == "node":
            node = self.nodes.get(key)
            return node.to_row() if node else None
        if kind == "info":
            info = self.infos.get(key)
            return info.to_row() if info else None
        link = self.links.get(key)
        return link.to_row() if link else None

    # -- applying rows -----------------------------------------------------------------

    def apply(self, kind: str, row: dict[str, Any]) -> bool:
        """Apply one after-image if it is newer than what we hold; True when applied."""
        if kind == "node":
            return self.apply_node(row)
        if kind == "info":
            return self.apply_info(row)
        return self.apply_link(row)

    def apply_node(self, row: dict[str, Any], hooks: bool = True) -> bool:
        node_id = row["id"]
        version = int(row.get("version", 1))
        if version <= self.version_of("node", node_id):
            return False
        old = self.nodes.get(node_id)
        if old is not None:
            for key in old.normalized:
                bucket_remove(self.inverted, key, node_id)
            if old.parent_id is not None and (row.get("deleted") or row.get("parent_id") != old.parent_id):
                siblings = self.children.get(old.parent_id)
                if siblings is not None:
                    siblings.pop(node_id, None)
                    self.children_dirty.add(old.parent_id)
        if row.get("deleted"):
            self.nodes.pop(node_id, None)
            self.dead_versions[("node", node_id)] = version
            if hooks:
                for hook in self.node_hooks:
                    hook(old, None)
            return True
        self.dead_versions.pop(("node", node_id), None)
        node = KeywordNode.from_row(row)
        self.nodes[node_id] = node
        for key in node.normalized:
            bucket_add(self.inverted, key, node_id)
        if node.parent_id is not None:
            self.children.setdefault(node.parent_id, {})[node_id] = None
            self.children_dirty.add(node.parent_id)
        self.children_dirty.add(node_id)
        if hooks:
            for hook in self.node_hooks:
                hook(old, node)
        return True

    def insert_new_nodes(self, rows: list[dict[str, Any]]) -> None:
        """Bulk path for rows of ids this state has never held live (batch imports):
        no version comparison, no old entry to unlink, no hooks."""
        nodes, inverted, children, dirty = self.nodes, self.inverted, self.children, self.children_dirty
        dead = self.dead_versions
        for row in rows:
            node_id = row["id"]
            if node_id in nodes:
                self.apply_node(row, hooks=False)
                continue
            dead.pop(("node", node_id), None)
            node = KeywordNode(
                node_id,
                row["name"],
                list(row["aliases"]),
                list(row["normalized"]),
                row["level"],
                row["parent_id"],
                [],
                row["description"],
                dict(row["metadata"]),
                row["version"],
                row["created_at"],
                row["updated_at"],
                False,
            )
            nodes[node_id] = node
            for key in node.normalized:
                if key in inverted:
                    bucket_add(inverted, key, node_id)
                else:
                    inverted[key] = (node_id,)
            parent = node.parent_id
            bucket = children.get(parent)  # type: ignore[arg-type]
            if bucket is None:
                children[parent] = {node_id: None}  # type: ignore[index]
            else:
                bucket[node_id] = None
            dirty.add(parent)  # type: ignore[arg-type]
            dirty.add(node_id)

    def apply_info(self, row: dict[str, Any]) -> bool:
        info_id = row["id"]
        version = int(row.get("version", 1))
        if version <= self.version_of("info", info_id):
            return False
        old = self.infos.get(info_id)
        if row.get("deleted"):
            self.infos.pop(info_id, None)
            self.dead_versions[("info", info_id)] = version
            new = None
        else:
            self.dead_versions.pop(("info", info_id), None)
            new = Info.from_row(row)
            self.infos[info_id] = new
        for hook in self.info_hooks:
            hook(old, new)
        return True

    def apply_link(self, row: dict[str, Any]) -> bool:
        key = link_key(row["info_id"], row["keyword_id"])
        version = int(row.get("version", 1))
        if version <= self.version_of("link", key):
            return False
        old = self.links.get(key)
        info_id, kw_id = row["info_id"], row["keyword_id"]
        if row.get("deleted"):
            self.links.pop(key, None)
            self.dead_versions[("link", key)] = version
            bucket = self.info_by_kw.get(kw_id)
            if bucket is not None:
                bucket.pop(info_id, None)
                if not bucket:
                    del self.info_by_kw[kw_id]
            bucket = self.kw_by_info.get(info_id)
            if bucket is not None:
                bucket.pop(kw_id, None)
                if not bucket:
                    del self.kw_by_info[info_id]
            new = None
        else:
            self.dead_versions.pop(("link", key), None)
            new = InfoKeywordLink.from_row(row)
            self.links[key] = new
            self.info_by_kw.setdefault(kw_id, {})[info_id] = None
            self.kw_by_info.setdefault(info_id, {})[kw_id] = None
        for hook in self.link_hooks:
            hook(old, new)
        return True

    # -- queries -----------------------------------------------------------------------

    def child_ids(self, node_id: str) -> list[str]:
        return list(self.children.get(node_id, ()))

    def has_children(self, node_id: str) -> bool:
        return bool(self.children.get(node_id))

    def ancestors(self, node_id: str) -> list[str]:
        """Ids from root down to (excluding) ``node_id``; stops on a cycle or dangling id."""
        chain: list[str] = []
        seen = {node_id}
        node = self.nodes.get(node_id)
        while node is not None and node.parent_id is not None:
            pid = node.parent_id
            if pid in seen:
                break
            seen.add(pid)
            chain.append(pid)
            node = self.nodes.get(pid)
        chain.reverse()
        return chain

    def is_within(self, node_id: str, roots: set[str]) -> bool:
        """True when ``node_id`` is one of ``roots`` or below one of them."""
        if node_id in roots:
            return True
        node = self.nodes.get(node_id)
        steps = 0
        while node is not None and node.parent_id is not None and steps < 10_000:
            if node.parent_id in roots:
                return True
            node = self.nodes.get(node.parent_id)
            steps += 1
        return False

    def subtree(self, node_id: str) -> list[str]:
        """``node_id`` and all its descendants, breadth first."""
        out = [node_id]
        seen = {node_id}
        i = 0
        while i < len(out):
            for child in self.children.get(out[i], ()):
                if child not in seen and child in self.nodes:
                    seen.add(child)
                    out.append(child)
            i += 1
        return out

    # -- rebuild and persistence ---------------------------------------------------------

    def rebuilt_maps(self) -> dict[str, dict[str, list[str]]]:
        """The four index maps recomputed from the live rows (for check and persistence)."""
        inverted: dict[str, list[str]] = {}
        children: dict[str, list[str]] = {}
        for node in self.nodes.values():
            for key in node.normalized:
                inverted.setdefault(key, []).append(node.id)
            if node.parent_id is not None:
                children.setdefault(node.parent_id, []).append(node.id)
        info_by_kw: dict[str, list[str]] = {}
        kw_by_info: dict[str, list[str]] = {}
        for link in self.links.values():
            info_by_kw.setdefault(link.keyword_id, []).append(link.info_id)
            kw_by_info.setdefault(link.info_id, []).append(link.keyword_id)
        return {
            "inverted": {k: sorted(v) for k, v in inverted.items()},
            "children": {k: sorted(v) for k, v in children.items()},
            "info_by_kw": {k: sorted(v) for k, v in info_by_kw.items()},
            "kw_by_info": {k: sorted(v) for k, v in kw_by_info.items()},
        }

    def live_maps(self) -> dict[str, dict[str, list[str]]]:
        """The incrementally maintained maps, in the same shape as :meth:`rebuilt_maps`."""

        def _clean(m: dict[str, dict[str, None]], live: Callable[[str], bool]) -> dict[str, list[str]]:
            return {k: sorted(i for i in v if live(i)) for k, v in m.items() if any(live(i) for i in v)}

        return {
            "inverted": _clean(self.inverted, lambda i: True),
            "children": _clean(self.children, lambda i: i in self.nodes),
            "info_by_kw": _clean(self.info_by_kw, lambda i: True),
            "kw_by_info": _clean(self.kw_by_info, lambda i: True),
        }

    def persist(self, base: Path, fingerprint: dict[str, Any], maps_rebuilt: bool = False) -> None:
        """Write the state image (:mod:`knowhub.tree.image`) tagged with ``fingerprint``,
        with the maps in the order a rebuild makes them (``maps_rebuilt``: the state's
        maps were just rebuilt, use them as they are), and drop the files of earlier
        formats (per-map JSON files, id->offset files)."""
        image.write(base, self, None if maps_rebuilt else self.rebuilt_maps(), fingerprint, SMALL_BUCKET)
        for name in (*LEGACY_INDEX_FILES, PERSIST_MARKER):
            (base / "indexes" / name).unlink(missing_ok=True)
        for stale in ("keywords", "infos"):
            (base / stale / "index.json").unlink(missing_ok=True)

    @staticmethod
    def read_persisted(base: Path) -> tuple[dict[str, Any] | None, dict[str, dict[str, list[str]]]]:
        """The maps of the state image and its fingerprint (for ``check``): ``(None, {})``
        when there is none, ``({"invalid": True}, {})`` when it is damaged."""
        path = image.image_path(base)
        try:
            found = image.read_header(path)
            if found is None:
                return None, {}
            head, at = found
            return head["fingerprint"], image.maps_of(image.read_payload(path, head, at))
        except image.ImageError:
            return {"invalid": True}, {}

    def replay(self, records: Iterable[dict[str, Any]]) -> None:
        """Apply change-log records written after an image was taken, then put every
        children and link bucket they touched in the order a rebuild makes (sorted; the
        inverted buckets are kept sorted anyway), so that an image plus its tail opens to
        the same state as a load of the JSONL files."""
        parents: set[str] = set()
        kws: set[str] = set()
        infos: set[str] = set()
        for record in records:
            after = record.get("after") or {}
            for row in after.get("nodes") or ():
                old = self.nodes.get(row["id"])
                if old is not None:
                    parents.add(old.parent_id)  # type: ignore[arg-type]
                parents.add(row.get("parent_id"))  # type: ignore[arg-type]
                self.apply_node(row)
            for row in after.get("infos") or ():
                self.apply_info(row)
            for row in after.get("links") or ():
                kws.add(row["keyword_id"])
                infos.add(row["info_id"])
                self.apply_link(row)
        for index, keys in ((self.children, parents), (self.info_by_kw, kws), (self.kw_by_info, infos)):
            for key in keys:
                bucket = index.get(key)
                if bucket is None:
                    continue
                if bucket:
                    index[key] = dict.fromkeys(sorted(bucket))
                else:
                    del index[key]

    def adopt_maps(self, maps: dict[str, dict[str, list[str]]]) -> None:
        """Install persisted maps (fingerprint already verified) instead of rebuilding."""
        self.children_dirty = set(self.nodes)
        self.inverted = {k: tuple(v) if len(v) <= SMALL_BUCKET else dict.fromkeys(v) for k, v in maps["inverted"].items()}
        self.children = {k: dict.fromkeys(v) for k, v in maps["children"].items()}
        self.info_by_kw = {k: dict.fromkeys(v) for k, v in maps["info_by_kw"].items()}
        self.kw_by_info = {k: dict.fromkeys(v) for k, v in maps["kw_by_info"].items()}

    def rebuild_maps(self) -> None:
        maps = self.rebuilt_maps()
        self.adopt_maps(maps)

    def bulk_load(self, kind: str, rows: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """Load rows from an entity file without maintaining maps (call rebuild/adopt after)."""
        # a live row drops the id's tombstone, as apply_* does, so that the tombstones
        # are the same whichever way the state was built (image, replay or JSONL)
        dead = self.dead_versions
        if kind == "node":
            nodes = self.nodes
            for _offset, row in rows:
                node_id = row["id"]
                version = int(row.get("version", 1))
                cur = nodes.get(node_id)
                cur_v = cur.version if cur is not None else self.dead_versions.get(("node", node_id), 0)
                if version <= cur_v:
                    continue
                if row.get("deleted"):
                    nodes.pop(node_id, None)
                    dead[("node", node_id)] = version
                else:
                    if dead:  # a tombstone followed by a newer live row (undo of a delete)
                        dead.pop(("node", node_id), None)
                    nodes[node_id] = KeywordNode.from_row(row)
        elif kind == "info":
            for _offset, row in rows:
                info_id = row["id"]
                version = int(row.get("version", 1))
                if version <= self.version_of("info", info_id):
                    continue
                if row.get("deleted"):
                    self.infos.pop(info_id, None)
                    self.dead_versions[("info", info_id)] = version
                else:
                    dead.pop(("info", info_id), None)
                    self.infos[info_id] = Info.from_row(row)
        else:
            for _offset, row in rows:
                key = link_key(row["info_id"], row["keyword_id"])
                version = int(row.get("version", 1))
                if version <= self.version_of("link", key):
                    continue
                if row.get("deleted"):
                    self.links.pop(key, None)
                    self.dead_versions[("link", key)] = version
                else:
                    dead.pop(("link", key), None)
                    self.links[key] = InfoKeywordLink.from_row(row)

    def counts(self) -> dict[str, int]:
        return {
            "nodes": len(self.nodes),
            "infos": len(self.infos),
            "links": len(self.links),
            "non_root_nodes": len(self.nodes) - (1 if ROOT_ID in self.nodes else 0),
        }


__all__ = ["INDEX_FILES", "SMALL_BUCKET", "TreeState", "bucket_add", "bucket_remove"]

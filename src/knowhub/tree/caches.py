"""Caches of seed 000 §4.4 with targeted invalidation, plus seed 001's MRU entry points.

* ``exact``: lookup keys of a query → node ids (TTL 1 h). Invalidated through the lookup
  keys: a node change drops every entry that used one of the node's old or new keys.
* ``descend``: normalized query → matched path (TTL 1 h). Dropped when any node on the
  path, or the parent of a changed node, appears in it.
* ``agent``: hash(task, query, subtree fingerprint) → decision (TTL 6 h). The fingerprint
  hashes the (id, version) pairs the agent saw, so a changed candidate can never be served
  a stale decision; the reverse index additionally drops entries of changed nodes.
* ``pages``: ``kw:{id}:infos:p{n}`` pages of infos of a keyword.
* ``node_keys``: reverse index node id → cache keys that depend on it.

``descend`` and ``agent`` are persisted under ``cache/`` (atomic writes) with the change-log
offset they reflect and reloaded on start when the log has not moved since; a corrupt file
is dropped with a warning (a cache is never the truth).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from knowhub.storage import atomic_write_json

_log = logging.getLogger("knowhub.tree")

EXACT_TTL_S = 3600.0
DESCEND_TTL_S = 3600.0
AGENT_TTL_S = 6 * 3600.0
MAX_ENTRIES = 100_000


class MRUCache:
    """Fixed-capacity most-recently-used list of node ids (seed 001 §4.5)."""

    def __init__(self, capacity: int = 128) -> None:
        self.capacity = max(0, int(capacity))
        self._items: OrderedDict[str, None] = OrderedDict()

    def touch(self, node_id: str) -> None:
        if self.capacity == 0:
            return
        self._items[node_id] = None
        self._items.move_to_end(node_id, last=False)
        while len(self._items) > self.capacity:
            self._items.popitem(last=True)

    def remove(self, node_id: str) -> None:
        self._items.pop(node_id, None)

    def snapshot(self) -> list[str]:
        return list(self._items)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    # seed 001 names
    Touch = touch
    Remove = remove
    Snapshot = snapshot


def fingerprint(pairs: Iterable[tuple[str, int]]) -> str:
    """Stable hash of (id, version) pairs: the 'subtree fingerprint' of seed 000 §4.4."""
    h = hashlib.blake2b(digest_size=12)
    for node_id, version in pairs:
        h.update(f"{node_id}:{version};".encode())
    return h.hexdigest()


def decision_key(task: str, query: str, fp: str) -> str:
    return hashlib.blake2b(f"{task}\x00{query}\x00{fp}".encode(), digest_size=16).hexdigest()


class TreeCaches:
    """All read caches of one tree instance."""

    def __init__(self, cache_dir: Path, *, exact_ttl_s: float = EXACT_TTL_S, descend_ttl_s: float = DESCEND_TTL_S, agent_ttl_s: float = AGENT_TTL_S) -> None:
        self.cache_dir = cache_dir
        self.exact_ttl_s = exact_ttl_s
        self.descend_ttl_s = descend_ttl_s
        self.agent_ttl_s = agent_ttl_s
        self.exact: dict[tuple[str, ...], tuple[list[str], float]] = {}
        self.exact_by_key: dict[str, set[tuple[str, ...]]] = {}
        self.descend: dict[str, tuple[list[str], float]] = {}
        self.agent: dict[str, tuple[dict[str, Any], list[str], float]] = {}
        self.pages: dict[str, list[str]] = {}
        self.node_keys: dict[str, set[str]] = {}
        self.dirty = False
        self.stats = {"exact_hits": 0, "descend_hits": 0, "agent_hits": 0, "page_hits": 0}

    # -- exact -----------------------------------------------------------------------

    def get_exact(self, keys: tuple[str, ...]) -> list[str] | None:
        entry = self.exact.get(keys)
        if entry is None:
            return None
        if entry[1] < time.monotonic():
            self._drop_exact(keys)
            return None
        self.stats["exact_hits"] += 1
        return entry[0]

    def put_exact(self, keys: tuple[str, ...], ids: list[str]) -> None:
        if len(self.exact) >= MAX_ENTRIES:
            self.clear_exact()
        self.exact[keys] = (ids, time.monotonic() + self.exact_ttl_s)
        for key in keys:
            self.exact_by_key.setdefault(key, set()).add(keys)

    def _drop_exact(self, keys: tuple[str, ...]) -> None:
        self.exact.pop(keys, None)
        for key in keys:
            bucket = self.exact_by_key.get(key)
            if bucket is not None:
                bucket.discard(keys)
                if not bucket:
                    del self.exact_by_key[key]

    def invalidate_lookup_keys(self, lookup_keys: Iterable[str]) -> None:
        for key in lookup_keys:
            for entry in list(self.exact_by_key.get(key, ())):
                self._drop_exact(entry)

    def clear_exact(self) -> None:
        self.exact.clear()
        self.exact_by_key.clear()

    # -- descend -----------------------------------------------------------------------

    def get_descend(self, q_norm: str) -> list[str] | None:
        entry = self.descend.get(q_norm)
        if entry is None:
            return None
        if entry[1] < time.time():
            self.descend.pop(q_norm, None)
            return None
        self.stats["descend_hits"] += 1
        return entry[0]

    def put_descend(self, q_norm: str, path: list[str]) -> None:
        if len(self.descend) >= MAX_ENTRIES:
            self.descend.clear()
        self.descend[q_norm] = (list(path), time.time() + self.descend_ttl_s)
        ck = "descend:" + q_norm
        for node_id in path:
            self.node_keys.setdefault(node_id, set()).add(ck)
        self.dirty = True

    # -- agent decisions -------------------------------------------------------------

    def get_agent(self, key: str) -> dict[str, Any] | None:
        entry = self.agent.get(key)
        if entry is None:
            return None
        if entry[2] < time.time():
            self.agent.pop(key, None)
            return None
        self.stats["agent_hits"] += 1
        return dict(entry[0])

    def put_agent(self, key: str, decision: dict[str, Any], node_ids: Iterable[str]) -> None:
        if len(self.agent) >= MAX_ENTRIES:
            self.agent.clear()
        ids = sorted(set(node_ids))
        self.agent[key] = (dict(decision), ids, time.time() + self.agent_ttl_s)
        ck = "agent:" + key
        for node_id in ids:
            self.node_keys.setdefault(node_id, set()).add(ck)
        self.dirty = True

    # -- info pages ----------------------------------------------------------------------

    @staticmethod
    def page_key(kw_id: str, relation: str | None, page: int, size: int, order: str) -> str:
        return f"kw:{kw_id}:infos:p{page}:{size}:{relation or '*'}:{order}"

    def get_page(self, key: str) -> list[str] | None:
        page = self.pages.get(key)
        if page is not None:
            self.stats["page_hits"] += 1
        return page

    def put_page(self, kw_id: str, key: str, info_ids: list[str]) -> None:
        if len(self.pages) >= MAX_ENTRIES:
            self.pages.clear()
        self.pages[key] = info_ids
        self.node_keys.setdefault(kw_id, set()).add("page:" + key)

    # -- invalidation --------------------------------------------------------------------

    def invalidate_node(self, node_id: str) -> None:
        """Drop every cache entry that depends on ``node_id``."""
        keys = self.node_keys.pop(node_id, None)
        if not keys:
            return
        for ck in keys:
            kind, _, key = ck.partition(":")
            if kind == "descend":
                self.descend.pop(key, None)
                self.dirty = True
            elif kind == "agent":
                self.agent.pop(key, None)
                self.dirty = True
            elif kind == "page":
                self.pages.pop(key, None)

    def clear(self) -> None:
        self.clear_exact()
        self.descend.clear()
        self.agent.clear()
        self.pages.clear()
        self.node_keys.clear()
        self.dirty = True

    # -- persistence -----------------------------------------------------------------

    def save(self, log_offset: int) -> None:
        """Write descend and agent caches atomically (called on close and every N writes).

        ``log_offset`` is the change-log size the caches reflect: a later open whose change
        log has moved on (a writer that died before saving its caches) must not trust them.
        """
        now = time.time()
        descend = {q: {"path": p, "expires": e} for q, (p, e) in self.descend.items() if e > now}
        agent = {k: {"decision": d, "nodes": n, "expires": e} for k, (d, n, e) in self.agent.items() if e > now}
        for name, entries in (("descend_cache.json", descend), ("agent_decision.json", agent)):
            atomic_write_json(self.cache_dir / name, {"log_offset": int(log_offset), "entries": entries}, durable=False)
        self.dirty = False

    def load(self, valid_node: Any, log_offset: int) -> None:
        """Load persisted caches saved at change-log size ``log_offset``; drop files that are
        corrupt or from another moment of the log, and entries naming gone nodes."""
        now = time.time()
        for name in ("descend_cache.json", "agent_decision.json"):
            path = self.cache_dir / name
            if not path.exists():
                continue
            try:
                doc = orjson.loads(path.read_bytes())
                if not isinstance(doc, dict) or not isinstance(doc.get("entries"), dict):
                    raise ValueError("not a cache file")
                if doc.get("log_offset") != log_offset:
                    # operations were committed after the save (their invalidations are lost)
                    _log.info("dropping cache file %s: saved at another change-log offset", path)
                    continue
                for key, entry in doc["entries"].items():
                    if float(entry["expires"]) <= now:
                        continue
                    if name == "descend_cache.json":
                        path_ids = [str(x) for x in entry["path"]]
                        if all(valid_node(x) for x in path_ids):
                            self.put_descend(str(key), path_ids)
                            self.descend[str(key)] = (path_ids, float(entry["expires"]))
                    else:
                        nodes = [str(x) for x in entry["nodes"]]
                        if all(valid_node(x) for x in nodes) and isinstance(entry["decision"], dict):
                            self.put_agent(str(key), entry["decision"], nodes)
                            self.agent[str(key)] = (entry["decision"], nodes, float(entry["expires"]))
            except (OSError, ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
                _log.warning("dropping corrupt cache file %s: %s", path, exc)
                with contextlib.suppress(OSError):
                    path.unlink()
        self.dirty = False


__all__ = ["MRUCache", "TreeCaches", "decision_key", "fingerprint"]

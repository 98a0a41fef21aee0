"""IndexProjector: turns context nodes into index records and keeps the indexes in step.

Seed 004 §7.3 / §10.6. One node gives up to three :class:`~knowhub.providers.records.IndexRecord`
copies, one per level (L0 ``abstract``, L1 ``overview``, L2 ``content``), each with
``id = stable_record_id(uri, level)`` so re-projecting a node overwrites its records.
What a record is filtered on, and what its parent is, depends on the primary store's URI
scheme, which this shared layer does not know: a :class:`RecordShape` supplied by the engine
gives both (the context engine's is :class:`knowhub.context.indexing.ContextRecordShape`,
with ``account_id``, ``owner_space``, ``user_id``/``agent_id``, ``category`` and
``context_type``). The filters must hold ``account_id`` and ``owner_space`` — they name the
BM25 partition and are what a retriever narrows on *inside* the index search.

The L0 record's metadata holds what a hit needs without reading the node: ``version``,
``source_refs``, ``abstract``, ``has_overview``, ``has_content``, ``updated_at``,
``event_time``/``session_time`` when known, and a ``text_hash`` per level that lets an
unchanged level keep its vector instead of being embedded again.

Besides the vector index the projector feeds a :class:`~knowhub.index.lexical.LexicalIndex`
(BM25 over the level-0 text: the abstract, plus the overview when ``lexical_fields`` says
so) and optionally a :class:`~knowhub.providers.graph.GraphStore` with relation copies.

The projector works on duck-typed nodes (any object with ``uri``, ``abstract``,
``overview``, ``content``, ``category``, ``context_type``, ``metadata`` and ``version``) and
imports no engine — reading the primary store is the dispatcher's job.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from knowhub.errors import InvalidInputError
from knowhub.index.events import EdgeLike, MoveProjection
from knowhub.index.lexical import LexicalDoc, LexicalIndex, partition_key
from knowhub.providers.embedding import Embedder
from knowhub.providers.graph import GraphStore
from knowhub.providers.records import GraphEdge, IndexRecord, RelationIndexRecord, stable_record_id
from knowhub.providers.vector import VectorIndex

__all__ = ["LEVEL_FIELDS", "IndexProjector", "RecordShape"]

#: Node attribute of each index level.
LEVEL_FIELDS: dict[int, str] = {0: "abstract", 1: "overview", 2: "content"}
_MAX_REFS = 2000
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


class IndexProjector:
    """Builds records (seed 004 §10.6) and applies them to the vector and lexical indexes.

    Args:
        embedder: vectorizes record texts.
        vectors: the vector index copy.
        shape: the engine's filters and parents of a node (keyword, required).
        lexical: the BM25 copy (None: no lexical index).
        graph: relation copies (None: relations are not projected).
        levels: which levels get vector records (default all three).
        lexical_fields: node fields concatenated into the level-0 BM25 document.
        max_embed_chars: longer texts are cut before embedding (L2 content can be long).
    """

    def __init__(
        self,
        embedder: Embedder,
        vectors: VectorIndex,
        lexical: LexicalIndex | None = None,
        graph: GraphStore | None = None,
        *,
        shape: RecordShape,
        levels: Sequence[int] = (0, 1, 2),
        lexical_fields: Sequence[str] = ("abstract",),
        max_embed_chars: int = 4000,
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.lexical = lexical
        self.graph = graph
        self.shape = shape
        self.levels = tuple(sorted(set(levels) | {0}))
        self.lexical_fields = tuple(lexical_fields)
        self.max_embed_chars = max_embed_chars
        self._pending: dict[str, Any] = {}
        self._lock = threading.RLock()

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
                for key in ("event_time", "session_time", "routing_key", "speakers"):
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

    def upsert_nodes(self, nodes: Sequence[Any]) -> int:
        """Project nodes now: build records, embed changed levels, upsert, update BM25."""
        records: list[IndexRecord] = []
        lexical_docs: list[LexicalDoc] = []
        stale: list[str] = []
        for node in nodes:
            built = self.build_context_records(node)
            kept = {r.id for r in built}
            stale.extend(stable_record_id(node.uri, lvl) for lvl in self.levels if stable_record_id(node.uri, lvl) not in kept)
            records.extend(built)
            if self.lexical is not None:
                l0 = built[0]
                lexical_docs.append(LexicalDoc(
                    doc_id=l0.id,
                    uri=node.uri,
                    partition=partition_key(l0.filters["account_id"], l0.filters["owner_space"], l0.context_type),
                    category=l0.category,
                    context_type=l0.context_type,
                    text=self.lexical_text(node),
                ))
        self._embed(records)
        with self._lock:
            if stale:
                self.vectors.delete_ids(stale)
            self.vectors.upsert(records)
            if self.lexical is not None:
                for doc in lexical_docs:
                    self.lexical.add(doc)
        return len(nodes)

    def _embed(self, records: list[IndexRecord]) -> None:
        """Fill vectors, reusing the stored vector of a level whose text did not change."""
        todo: list[IndexRecord] = []
        getter = getattr(self.vectors, "get", None)
        for record in records:
            old = getter(record.id) if callable(getter) else None
            if old is not None and old.vector is not None and old.metadata.get("text_hash") == record.metadata["text_hash"]:
                record.vector = old.vector
            else:
                todo.append(record)
        if not todo:
            return
        texts = [r.text[: self.max_embed_chars] for r in todo]
        matrix_fn = getattr(self.embedder, "embed_matrix", None)
        if callable(matrix_fn):
            matrix = matrix_fn(texts)
            for record, row in zip(todo, matrix, strict=True):
                record.vector = row
        else:
            for record, emb in zip(todo, self.embedder.embed_texts(texts), strict=True):
                record.vector = emb.dense_vector

    def delete_uri(self, uri: str, *, recursive: bool = True) -> int:
        """Remove the records of a node (and of its subtree); returns vector records removed."""
        with self._lock:
            for pending in [u for u in self._pending if u == uri or u.startswith(uri + "/")]:
                del self._pending[pending]
            removed = _delete(self.vectors, uri, recursive)
            if self.lexical is not None:
                self.lexical.remove_uri(uri, recursive=recursive)
            if self.graph is not None:
                remover = getattr(self.graph, "remove_uri", None)
                if callable(remover):
                    try:
                        remover(uri, recursive=recursive)
                    except TypeError:
                        remover(uri)
            return removed

    def move_uri(self, from_uri: str, to_uri: str) -> MoveProjection:
        """Rewrite the index copies of a moved subtree (no re-embedding)."""
        projection = self.build_move_records(from_uri, to_uri)
        with self._lock:
            self.flush()
            self.vectors.move_uri(from_uri, to_uri)
            if self.lexical is not None:
                for doc in self.lexical.docs_under(from_uri):
                    self.lexical.remove(doc.doc_id)
                    new_uri = to_uri + doc.uri[len(from_uri):]
                    self.lexical.add(LexicalDoc(stable_record_id(new_uri, 0), new_uri, doc.partition,
                                                doc.category, doc.context_type, doc.text))
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
            self.vectors.clear()
            if self.lexical is not None:
                self.lexical.clear()
            clear = getattr(self.graph, "clear", None) if self.graph is not None else None
            if callable(clear):
                clear()

    def indexed_versions(self) -> dict[str, int]:
        """``uri → version`` of every node with an L0 record (for reconciliation)."""
        out: dict[str, int] = {}
        ids = getattr(self.vectors, "ids", None)
        getter = getattr(self.vectors, "get", None)
        if not callable(ids) or not callable(getter):
            return out
        for rid in ids():
            record = getter(rid)
            if record is not None and record.level == 0:
                out[record.uri] = int(record.metadata.get("version", 0) or 0)
        return out

    def rebuild_lexical_from_vectors(self) -> int:
        """Refill the BM25 copy from the vector index records (after a load): the level
        texts of each node are joined as :meth:`lexical_text` joins the node's fields."""
        if self.lexical is None:
            return 0
        ids = getattr(self.vectors, "ids", None)
        getter = getattr(self.vectors, "get", None)
        if not callable(ids) or not callable(getter):
            return 0
        by_uri: dict[str, dict[int, Any]] = {}
        for rid in ids():
            record = getter(rid)
            if record is not None:
                by_uri.setdefault(record.uri, {})[record.level] = record
        self.lexical.clear()
        field_level = {name: level for level, name in LEVEL_FIELDS.items()}
        count = 0
        for uri, levels in by_uri.items():
            l0 = levels.get(0)
            if l0 is None:
                continue
            parts = [levels[field_level[f]].text for f in self.lexical_fields if field_level.get(f) in levels]
            self.lexical.add(LexicalDoc(l0.id, uri,
                                        partition_key(str(l0.filters.get("account_id", "")), str(l0.filters.get("owner_space", "")),
                                                      l0.context_type),
                                        l0.category, l0.context_type, "\n".join(p for p in parts if p.strip())))
            count += 1
        return count


def _delete(vectors: VectorIndex, uri: str, recursive: bool) -> int:
    """``delete_by_uri`` with the subtree when the index supports ``recursive``."""
    try:
        return int(vectors.delete_by_uri(uri, recursive=recursive))  # type: ignore[call-arg]
    except TypeError:
        return int(vectors.delete_by_uri(uri))

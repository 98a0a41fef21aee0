"""The persisted copy of an :class:`~knowhub.index.embedded.EmbeddedIndex`: checkpoint,
open, vacuum and verify (split from ``embedded.py`` so each module stays readable).

:meth:`PersistedCopy.checkpoint` writes a new generation (:mod:`knowhub.index.embedded_copy`)
and then switches ``manifest.json`` to it; :meth:`PersistedCopy._load` opens the current one
with whole arrays and no per-document work, and migrates the earlier one-file format once.
The mixin works on the attributes :class:`~knowhub.index.embedded.EmbeddedIndex` owns
(rows, vectors, postings, lexical partitions, lock).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from knowhub.errors import InvalidInputError, StorageError
from knowhub.index.embedded_copy import (
    FORMAT,
    CopyDamaged,
    CopyVanished,
    Generation,
    Snapshot,
    discard_staged,
    merge_counts,
    open_generation,
    read_manifest,
    read_one_file_copy,
    remove_old_generations,
    stage_generation,
    verify_files,
    write_generation,
)
from knowhub.index.embedded_postings import LexicalPart

log = logging.getLogger("knowhub.index.embedded")


@dataclass(slots=True)
class StoredDoc:
    """What the index keeps of a document written since its copy was loaded (older ones
    are records of the copy, read on demand) besides its tantivy postings and vector row."""

    tokens: str
    filters: dict[str, tuple[str, ...]]
    numbers: dict[str, float]
    payload: dict[str, Any]
    has_vector: bool
    partition: str = ""


@dataclass(slots=True)
class Frozen:
    """The documents at a checkpoint's start (``EmbeddedIndex._freeze``): rows, copies of
    the arrays, and the records still to serialize — from ``fresh`` (a copy of the dict;
    a :class:`StoredDoc` is replaced, never changed) or from ``base``, the loaded
    generation, which never changes."""

    ids: list[str | None]
    fresh: dict[int, StoredDoc]
    base: Any
    live: np.ndarray
    has_vec: np.ndarray
    has_tok: np.ndarray
    numbers: list[np.ndarray]
    postings: Callable[[], dict[str, Any]]  # merges the filter postings (FilterPostings.freeze)
    parts: list[tuple[str, int, int, Any]]
    vectors: np.ndarray
    owner: Any  # the faiss index whose buffer ``vectors`` views: kept alive while it is written

    def snapshot(self) -> Snapshot:
        """Serialize the records (what made saves slow under the lock at 1M documents)."""
        records: list[bytes] = []
        payloads: list[bytes] = []
        for row, doc_id in enumerate(self.ids):
            stored = self.fresh.get(row)
            if stored is not None:
                records.append(orjson.dumps({
                    "id": doc_id, "t": stored.tokens, "f": stored.filters, "n": stored.numbers,
                    "v": stored.has_vector, "s": stored.partition,
                }))
                payloads.append(orjson.dumps(stored.payload))
            elif doc_id is not None and self.base is not None:
                record, payload = self.base.raw(row)
                records.append(record)
                payloads.append(payload)
            else:
                records.append(b"")
                payloads.append(b"")
        return Snapshot(ids=self.ids, records=records, payloads=payloads, vectors=self.vectors, live=self.live, has_vec=self.has_vec,
                        has_tok=self.has_tok, numbers=self.numbers, postings=self.postings(), parts=self.parts)


class PersistedCopy:
    """Checkpoint and open of the index's on-disk copy (mixed into ``EmbeddedIndex``)."""

    # Provided by EmbeddedIndex.
    path: Any
    number_fields: tuple[str, ...]
    damaged: list[Any]
    _dim: int
    _lock: Any
    _save_lock: Any
    _closed: bool
    _stamp: str | None
    _state: dict[str, Any] | None
    _files: dict[str, Any]
    _parts: dict[str, LexicalPart]
    _schema: Any
    _row_ids: list[str | None]
    _rows: dict[str, int]
    _fresh: dict[int, StoredDoc]
    _base: Any
    _postings: Any
    _matrix: np.ndarray
    _live: np.ndarray
    _has_vec: np.ndarray
    _has_tok: np.ndarray
    _numbers: dict[str, np.ndarray]
    _free: list[int]
    _flat: Any
    _pinned: Any

    if TYPE_CHECKING:  # methods of EmbeddedIndex this mixin calls
        def _reset(self) -> None: ...
        def _grow(self, needed: int) -> None: ...
        def _put(self, doc_id: str, stored: StoredDoc, vector: np.ndarray | None) -> None: ...
        def _workdir(self) -> Any: ...
        def _unpin(self) -> None: ...
        def rewrite_partitions(self) -> list[str]: ...

    def stamp(self) -> str | None:
        """The stamp of the last checkpoint these documents reflect."""
        return self._stamp

    def saved_state(self) -> dict[str, Any] | None:
        """The ``state`` of the loaded (or last written) checkpoint (None: none)."""
        return self._state

    def checkpoint(self, stamp: str, *, state: Mapping[str, Any] | None = None) -> None:
        """Write a new generation of the copy, then switch the manifest (naming ``stamp``,
        ``state`` — e.g. the change-log position the documents reflect — and the checksums)
        to it: a crash before the switch leaves the previous copy in force.

        The copy is of the documents at the call: the lock is held only while the vectors
        and tantivy segments are staged and the rest is copied (``_freeze``); records are
        serialized, files written and synced with the lock released, so searches and
        writes go on during a save. Saves run one at a time."""
        if not isinstance(stamp, str):
            raise InvalidInputError("checkpoint stamp must be a string")
        state = dict(state) if state is not None else None
        with self._save_lock:
            with self._lock:
                if self._closed:  # its documents are gone: a save now would write an empty copy
                    raise StorageError("cannot save a closed retrieval index", path=str(self.path))
                if self.path is None:
                    self._stamp, self._state = stamp, state
                    return
                frozen, dirs = self._freeze()  # pins the vector rows until _unpin
                try:
                    staged = stage_generation(self.path, dirs, self._files)
                except BaseException as exc:
                    self._unpin()
                    if isinstance(exc, (OSError, ValueError)):
                        raise StorageError(f"cannot write the retrieval index: {exc}", path=str(self.path)) from exc
                    raise
            try:
                manifest = write_generation(self.path, frozen.snapshot(), staged, dim=self._dim,
                                            number_fields=self.number_fields, stamp=stamp, state=state,
                                            known=self._files)
            except BaseException as exc:
                discard_staged(staged)
                if isinstance(exc, (OSError, ValueError, TypeError)):
                    raise StorageError(f"cannot write the retrieval index: {exc}", path=str(self.path)) from exc
                raise
            finally:
                with self._lock:
                    self._unpin()
            with self._lock:  # reported once it is on disk (an owner may purge what it covers)
                self._stamp, self._state, self._files = stamp, state, manifest["files"]

    def _freeze(self) -> tuple[Frozen, list[Any]]:
        """Everything a generation holds, taken under the lock: copies of the row table and
        the small arrays, the filter postings (merged later) and frequencies, the vectors as a view of faiss'
        buffer, which stays as it is until :meth:`_unpin` (``EmbeddedIndex._pinned``: no
        row is reused or zeroed in it, a growth moves to a new buffer), and the
        partitions' committed tantivy directories for :func:`stage_generation`."""
        n = len(self._row_ids)
        for part in self._parts.values():
            part.commit()
        parts, dirs = [], []
        for name, part in self._parts.items():
            assert part.directory is not None
            if not part.docs:  # emptied (a user forgotten): neither its name nor its segments stay
                continue
            parts.append((name, part.docs, part.lexical_docs, merge_counts(part.base_df, part.df)))
            dirs.append(part.directory)
        frozen = Frozen(
            ids=list(self._row_ids), fresh=dict(self._fresh), base=self._base,
            live=self._live[:n].copy(), has_vec=self._has_vec[:n].copy(), has_tok=self._has_tok[:n].copy(),
            numbers=[self._numbers[name][:n].copy() for name in self.number_fields],
            postings=self._postings.freeze(), parts=parts, vectors=self._matrix[:n], owner=self._flat,
        )
        self._pinned = self._flat
        return frozen, dirs

    def vacuum(self) -> list[str]:
        """Rewrite the partitions that lost documents and save the copy again (so no
        segment keeps a deleted document's terms), then remove every saved generation but
        the current one at once (a save keeps the previous one for a grace period, for
        processes still opening it): after a forget, no older copy may keep the erased
        records. Returns the generation names removed."""
        if self.path is None:
            self.rewrite_partitions()
            return []
        with self._save_lock, self._lock:
            if self.rewrite_partitions() and self._stamp is not None:
                self.checkpoint(self._stamp, state=self._state)
            try:
                current = (read_manifest(self.path) or {}).get("generation")
            except (OSError, ValueError):
                return []
            if not isinstance(current, str):
                return []
            return remove_old_generations(self.path, keep={current}, grace_s=0.0)

    def verify_copy(self) -> list[str]:
        """Files of the saved copy whose full checksum differs from the manifest (reads every
        byte; an open checks sizes, small files and the edges of large ones)."""
        if self.path is None:
            return []
        try:
            manifest = read_manifest(self.path) or {}
        except (OSError, ValueError):
            return ["manifest.json"]
        name = manifest.get("generation")
        if not isinstance(name, str):
            return []
        return verify_files(self.path / name, manifest.get("files") or {})

    def _load(self) -> None:
        """Open the persisted copy; an unusable one leaves the index empty (stamp None)."""
        assert self.path is not None
        manifest_path = self.path / "manifest.json"
        for _attempt in range(3):  # a save by another process may replace the generation meanwhile
            try:
                manifest = read_manifest(self.path)
            except (OSError, ValueError) as exc:
                log.warning("retrieval index manifest at %s is unreadable (%s); starting empty", self.path, exc)
                self.damaged = [manifest_path]
                return
            if manifest is None:
                return
            if (
                manifest.get("format") != FORMAT
                or manifest.get("dim") != self._dim
                or manifest.get("number_fields") != list(self.number_fields)
            ):
                log.info("retrieval index at %s was made for another shape; starting empty", self.path)
                return
            if not isinstance(manifest.get("stamp"), str):
                self.damaged = [manifest_path]
                return
            if manifest.get("version") == 2:
                self._migrate(manifest)
                return
            try:
                generation = open_generation(self.path, manifest, self.number_fields)
                with self._lock:
                    self._adopt(generation)
            except CopyVanished:
                self._reset()
                continue
            except CopyDamaged as exc:
                log.warning("retrieval index at %s is damaged (%s); starting empty", self.path, exc)
                self._reset()
                self.damaged = [manifest_path, *exc.paths]
                return
            except (ValueError, KeyError, TypeError, OSError) as exc:
                log.warning("retrieval index at %s is damaged (%s); starting empty", self.path, exc)
                self._reset()
                self.damaged = [manifest_path, self.path / str(manifest.get("generation"))]
                return
            self._files = dict(manifest.get("files") or {})
            self._stamp = str(manifest["stamp"])
            self._state = manifest["state"] if isinstance(manifest.get("state"), dict) else None
            return
        log.warning("retrieval index at %s kept changing while it was opened; starting empty", self.path)

    def _adopt(self, gen: Generation) -> None:
        """Take a loaded generation as this index's state: whole arrays, no per-document work."""
        n = gen.rows
        self._grow(n)
        gen.read_vectors_into(self._matrix[:n])
        self._row_ids = list(gen.ids)
        self._rows = {doc_id: row for row, doc_id in enumerate(gen.ids) if doc_id is not None}
        live = gen.live
        if len(self._rows) != int(np.count_nonzero(live)) or any(
            not isinstance(i, str) for i in self._rows
        ):
            raise ValueError("ids and live rows differ")
        self._live[:n] = live
        self._has_vec[:n] = gen.has_vec
        self._has_tok[:n] = gen.has_tok
        for name in self.number_fields:
            self._numbers[name][:n] = gen.numbers[name]
        self._free = np.flatnonzero(~live).tolist()
        self._base = gen
        self._postings.adopt(gen.postings, live)
        for info in gen.parts:
            self._parts[info.name] = LexicalPart(self._schema, self._workdir().new_part_dir(info.tantivy_dir), info)

    def _migrate(self, manifest: dict[str, Any]) -> None:
        """Load a copy of the one-file format (version 2) the old way, once, and save it as
        a generation (its files are removed with the switch)."""
        assert self.path is not None
        try:
            records, matrix = read_one_file_copy(self.path, manifest, self._dim)
            with self._lock:
                self._restore(records, matrix)
        except CopyDamaged as exc:
            log.warning("retrieval index at %s is damaged (%s); starting empty", self.path, exc)
            self.damaged = exc.paths
            return
        except (ValueError, KeyError, TypeError, AttributeError, InvalidInputError) as exc:
            log.warning("retrieval index at %s is damaged (%s); starting empty", self.path, exc)
            self._reset()
            self.damaged = [self.path / name for name in ("manifest.json", "docs.jsonl", "vectors.npy")]
            return
        state = manifest["state"] if isinstance(manifest.get("state"), dict) else None
        log.warning("retrieval index at %s has the one-file format of earlier versions: loaded %d documents "
                    "once and saving them as a generation", self.path, len(records))
        try:
            self.checkpoint(str(manifest["stamp"]), state=state)
        except StorageError as exc:  # still usable in memory; the next save retries
            log.warning("could not save the migrated retrieval index: %s", exc)
            self._stamp, self._state = str(manifest["stamp"]), state

    def _restore(self, records: list[dict[str, Any]], matrix: np.ndarray) -> None:
        """Fill an empty index from a verified one-file copy (a loop over its documents)."""
        self._grow(len(records))
        self._matrix[: len(records)] = matrix
        number_fields = set(self.number_fields)
        for rec in records:
            doc_id, tokens, numbers = rec["id"], rec["t"], rec["n"]
            if not isinstance(doc_id, str) or not isinstance(tokens, str) or doc_id in self._rows:
                raise ValueError("malformed document record")
            if not set(numbers) <= number_fields:
                raise ValueError("unknown number field")
            filters = {str(k): tuple(v) for k, v in rec["f"].items()}
            partition = rec.get("s", "")
            if not isinstance(partition, str):
                raise ValueError("malformed partition")
            stored = StoredDoc(tokens, filters, numbers, rec["p"], bool(rec["v"]), partition)
            row = len(self._row_ids)
            vector = self._matrix[row] if stored.has_vector else None
            self._put(doc_id, stored, vector)

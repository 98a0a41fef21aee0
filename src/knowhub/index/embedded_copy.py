"""The saved copy of an :class:`~knowhub.index.embedded.EmbeddedIndex`, laid out so that an
open costs no per-document work (issue 20 §4: a million documents in seconds).

A copy is a *generation* directory ``g-<time>-<random>/`` beside ``manifest.json``::

    records.bin, records.off.npy   each row's record (id, tokens, filters, numbers,
                                   partition) as one JSON object, and the byte offsets
    payloads.bin, payloads.off.npy each row's payload (JSON; the hot path of a search reads
                                   only these); both read on demand through a memory map
    ids.json                       the id of every row (null for a free row)
    vectors.npy                    one float32 row per index row (zero where free)
    live/has_vec/has_tok.npy       per-row flags; num_<i>.npy the numeric columns
    post_<i>.vals.json/.off.npy/.rows.npy   filter postings, one sorted CSR per field
    df_<i>.toks.json/.cnt.npy      each partition's document frequencies
    tv_<i>/                        each partition's tantivy segments (opened from disk)
    gen.json                       partitions, fields, counts

``manifest.json`` names the generation and, for every file, its size and SHA-256; replacing
it atomically is the switch from one generation to the next, so a crash while a copy is
written leaves the previous one in force. At open every size is checked, files up to
``FULL_HASH_BYTES`` are hashed in full and larger ones by their first and last MiB (a torn
or truncated write shows there); :func:`verify_files` hashes everything (``check``).

tantivy keeps one writer per directory, so each process works on its own directory under
``work/`` whose files are hard links to the generation's (segments are immutable; a new
commit writes new files), locked with ``flock`` for the process's life: an open removes
the directories no live process holds.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import fcntl
import hashlib
import io
import mmap
import os
import secrets
import shutil
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR
from typing import Any

import numpy as np
import orjson

from knowhub.storage import atomic_write_bytes, fsync_dir
from knowhub.storage.modes import DIR_MODE, FILE_MODE, ensure_dir

FORMAT = "knowhub-embedded-index"
VERSION = 3
FULL_HASH_BYTES = 16 << 20
_EDGE = 1 << 20
#: Generations other than the current and previous one are removed once this old (s).
_GEN_GRACE_S = 600.0
#: A RAM filesystem with less free space is not used for work directories.
_SCRATCH_MIN_FREE = 1 << 30
_TANTIVY_OWN = (".tantivy-meta.lock", ".tantivy-writer.lock", ".managed.json")


class CopyDamaged(Exception):
    """The generation's files do not match the manifest (``paths``: what to quarantine)."""

    def __init__(self, reason: str, paths: list[Path]) -> None:
        super().__init__(reason)
        self.paths = paths


class CopyVanished(Exception):
    """A file of the generation disappeared while it was opened (a newer save removed it)."""


@dataclass(slots=True)
class Csr:
    """Sorted keys, each with a slice of ``data`` (rows of a filter value) or a count."""

    keys: list[str]
    off: np.ndarray
    data: np.ndarray

    def rows_of(self, key: str) -> np.ndarray | None:
        i = bisect.bisect_left(self.keys, key)
        if i == len(self.keys) or self.keys[i] != key:
            return None
        return self.data[int(self.off[i]) : int(self.off[i + 1])]

    def count_of(self, key: str) -> int:
        i = bisect.bisect_left(self.keys, key)
        return int(self.data[i]) if i < len(self.keys) and self.keys[i] == key else 0


@dataclass(slots=True)
class PartInfo:
    name: str
    docs: int
    lexical_docs: int
    df: Csr
    tantivy_dir: Path


@dataclass
class Generation:
    """A verified generation, loaded without touching its records or tantivy segments."""

    dir: Path
    rows: int
    ids: list[str | None]
    live: np.ndarray
    has_vec: np.ndarray
    has_tok: np.ndarray
    numbers: dict[str, np.ndarray]
    postings: dict[str, Csr]
    parts: list[PartInfo]
    files: dict[str, Any]
    _records: mmap.mmap | bytes = b""
    _rec_off: list[int] = field(default_factory=lambda: [0])
    _payloads: mmap.mmap | bytes = b""
    _pay_off: list[int] = field(default_factory=lambda: [0])

    def raw(self, row: int) -> tuple[bytes, bytes]:
        """The row's record and payload as saved."""
        return (bytes(self._records[self._rec_off[row] : self._rec_off[row + 1]]),
                bytes(self._payloads[self._pay_off[row] : self._pay_off[row + 1]]))

    def record(self, row: int) -> dict[str, Any]:
        """The row's record, its payload under ``p``."""
        rec = orjson.loads(self._records[self._rec_off[row] : self._rec_off[row + 1]])
        rec["p"] = self.payload(row)
        return rec

    def payload(self, row: int) -> dict[str, Any]:
        return orjson.loads(self._payloads[self._pay_off[row] : self._pay_off[row + 1]])

    def read_vectors_into(self, out: np.ndarray) -> None:
        """Copy the saved vectors into ``out`` (rows × dim float32) without a temporary."""
        with open(self.dir / "vectors.npy", "rb") as fh:
            version = np.lib.format.read_magic(fh)
            fmt = np.lib.format
            header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = header(fh)
            if shape != out.shape or fortran or dtype != np.float32:
                raise ValueError("vector file has another shape")
            view = memoryview(out.reshape(-1).view(np.uint8))
            while view:
                got = fh.readinto(view)
                if not got:
                    raise ValueError("vector file is short")
                view = view[got:]


# ---------------------------------------------------------------------- hashing


def _sha(path: Path, *, edges: bool = False) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        if edges:
            digest.update(fh.read(_EDGE))
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - _EDGE))
            digest.update(fh.read(_EDGE))
        else:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _entry(path: Path, known: Mapping[str, Any] | None = None, name: str = "") -> list[Any]:
    """``[size, sha256, edges sha256 | None]`` of a file (reused from ``known`` for an
    immutable tantivy segment file already hashed by an earlier save)."""
    size = path.stat().st_size
    old = (known or {}).get(name)
    if old is not None and old[0] == size and name.startswith("tv_") and not name.endswith("/meta.json"):
        return list(old)
    return [size, _sha(path), _sha(path, edges=True) if size > FULL_HASH_BYTES else None]


def check_files(gen_dir: Path, files: Mapping[str, Any]) -> None:
    """The cheap check at open: every size, small files in full, large ones by their edges."""
    for name, (size, full, edges) in files.items():
        path = gen_dir / name
        try:
            got = path.stat().st_size
        except FileNotFoundError as exc:
            raise CopyVanished(name) from exc
        if got != size or (_sha(path) if edges is None else _sha(path, edges=True)) != (full if edges is None else edges):
            raise CopyDamaged(f"{name} does not match the manifest", [gen_dir])


def verify_files(gen_dir: Path, files: Mapping[str, Any]) -> list[str]:
    """Names of the generation's files whose full SHA-256 differs (all bytes read)."""
    bad = []
    for name, (size, full, _edges) in files.items():
        path = gen_dir / name
        if not path.is_file() or path.stat().st_size != size or _sha(path) != full:
            bad.append(name)
    return bad


# ---------------------------------------------------------------------- reading


def read_manifest(root: Path) -> dict[str, Any] | None:
    """The manifest, None when there is no copy; raises on an unreadable one."""
    try:
        data = (root / "manifest.json").read_bytes()
    except FileNotFoundError:
        return None
    manifest = orjson.loads(data)
    if not isinstance(manifest, dict):
        raise ValueError("manifest is not an object")
    return manifest


def _json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


def _npy(path: Path, dtype: Any, length: int | None = None) -> np.ndarray:
    arr = np.load(path, allow_pickle=False)
    if arr.dtype != dtype or arr.ndim != 1 or (length is not None and arr.shape[0] != length):
        raise ValueError(f"{path.name} has another shape")
    return arr


def _blob(gen_dir: Path, name: str, rows: int) -> tuple[mmap.mmap | bytes, list[int]]:
    """A memory map of ``<name>.bin`` and its row offsets (a list: slicing with Python ints
    is twice as fast as with numpy's)."""
    offsets = _npy(gen_dir / f"{name}.off.npy", np.int64, rows + 1)
    with open(gen_dir / f"{name}.bin", "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data: mmap.mmap | bytes = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    if int(offsets[-1]) != size or (rows and bool(np.any(np.diff(offsets) < 0))):
        raise ValueError(f"{name} offsets do not match the file")
    return data, offsets.tolist()


def _csr(keys: Any, off: np.ndarray, data: np.ndarray) -> Csr:
    if not isinstance(keys, list) or off.shape[0] != len(keys) + 1 or int(off[-1]) != data.shape[0]:
        raise ValueError("inconsistent postings")
    return Csr(keys, off, data)


def open_generation(root: Path, manifest: Mapping[str, Any], number_fields: tuple[str, ...]) -> Generation:
    """Load the generation ``manifest`` names (checked with :func:`check_files`)."""
    name = manifest.get("generation")
    files = manifest.get("files")
    if not isinstance(name, str) or not name.startswith("g-") or "/" in name or not isinstance(files, dict):
        raise ValueError("manifest names no generation")
    gen_dir = root / name
    if not gen_dir.is_dir():
        raise CopyVanished(name)
    check_files(gen_dir, files)
    try:
        info = _json(gen_dir / "gen.json")
        rows = int(info["rows"])
        ids = _json(gen_dir / "ids.json")
        if not isinstance(ids, list) or len(ids) != rows:
            raise ValueError("id list has another length")
        records, rec_off = _blob(gen_dir, "records", rows)
        payloads, pay_off = _blob(gen_dir, "payloads", rows)
        numbers = {n: _npy(gen_dir / f"num_{i}.npy", np.float64, rows) for i, n in enumerate(number_fields)}
        postings = {
            str(fname): _csr(_json(gen_dir / f"post_{i}.vals.json"), _npy(gen_dir / f"post_{i}.off.npy", np.int64),
                             _npy(gen_dir / f"post_{i}.rows.npy", np.int64))
            for i, fname in enumerate(info["fields"])
        }
        parts = []
        for i, part in enumerate(info["parts"]):
            df = Csr(_json(gen_dir / f"df_{i}.toks.json"), np.zeros(0, dtype=np.int64),
                     _npy(gen_dir / f"df_{i}.cnt.npy", np.int64))
            if not isinstance(df.keys, list) or len(df.keys) != df.data.shape[0]:
                raise ValueError("inconsistent frequencies")
            parts.append(PartInfo(str(part["name"]), int(part["docs"]), int(part["lexical_docs"]), df, gen_dir / f"tv_{i}"))
        return Generation(gen_dir, rows, ids, _npy(gen_dir / "live.npy", np.bool_, rows),
                          _npy(gen_dir / "has_vec.npy", np.bool_, rows), _npy(gen_dir / "has_tok.npy", np.bool_, rows),
                          numbers, postings, parts, dict(files), records, rec_off, payloads, pay_off)
    except FileNotFoundError as exc:
        if not gen_dir.is_dir():
            raise CopyVanished(name) from exc
        raise CopyDamaged(f"{exc.filename} is missing", [gen_dir]) from exc
    except (ValueError, KeyError, TypeError, OSError, orjson.JSONDecodeError) as exc:
        raise CopyDamaged(str(exc), [gen_dir]) from exc


def read_one_file_copy(root: Path, manifest: Mapping[str, Any], dim: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Records and vectors of a copy in the format before generations (manifest version 2:
    ``docs.jsonl`` and ``vectors.npy`` beside it, both hashed in full)."""
    files = [root / name for name in ("manifest.json", "docs.jsonl", "vectors.npy")]
    try:
        docs_bytes = files[1].read_bytes()
        vector_bytes = files[2].read_bytes()
    except OSError as exc:
        raise CopyDamaged(f"unreadable: {exc}", [f for f in files if f.exists()]) from exc
    if (
        manifest.get("docs_sha256") != hashlib.sha256(docs_bytes).hexdigest()
        or manifest.get("vectors_sha256") != hashlib.sha256(vector_bytes).hexdigest()
    ):
        raise CopyDamaged("the files do not match the manifest", files)
    matrix = np.load(io.BytesIO(vector_bytes), allow_pickle=False)
    records = orjson.loads(b"[" + b",".join(docs_bytes.splitlines()) + b"]")
    if matrix.shape != (len(records), dim) or len(records) != manifest.get("count"):
        raise ValueError("record and vector counts differ")
    return records, matrix.astype(np.float32, copy=False)


# ---------------------------------------------------------------------- merging


def merge_postings(base: Csr | None, valid: np.ndarray | None, overlay: Mapping[str, set[int] | np.ndarray]) -> Csr:
    """One field's postings after the writes since ``base`` was loaded: base rows still
    ``valid`` plus the ``overlay`` rows (whole arrays; no loop over the base's rows)."""
    keys_in: list[str] = []
    rows_in: list[np.ndarray] = []
    ids_in: list[np.ndarray] = []
    if base is not None and base.keys:
        counts = np.diff(base.off)
        key_idx = np.repeat(np.arange(len(base.keys), dtype=np.int64), counts)
        keep = valid[base.data] if valid is not None else np.ones(base.data.shape[0], dtype=bool)
        keys_in = list(base.keys)
        rows_in.append(base.data[keep])
        ids_in.append(key_idx[keep])
    extra = [k for k in overlay if len(overlay[k])]
    if extra:
        start = len(keys_in)
        keys_in.extend(extra)
        for j, key in enumerate(extra):
            rows = np.fromiter(overlay[key], dtype=np.int64, count=len(overlay[key]))
            rows_in.append(rows)
            ids_in.append(np.full(rows.shape[0], start + j, dtype=np.int64))
    if not rows_in:
        return Csr([], np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    rows_all = np.concatenate(rows_in)
    ids_all = np.concatenate(ids_in)
    uniq = sorted(set(keys_in))
    rank = {k: i for i, k in enumerate(uniq)} if extra else None
    remap = np.fromiter((rank[k] for k in keys_in), dtype=np.int64, count=len(keys_in)) if rank is not None \
        else np.arange(len(keys_in), dtype=np.int64)
    new_ids = remap[ids_all]
    order = np.lexsort((rows_all, new_ids))
    new_ids, rows_all = new_ids[order], rows_all[order]
    counts = np.bincount(new_ids, minlength=len(uniq))
    used = counts > 0
    off = np.zeros(int(used.sum()) + 1, dtype=np.int64)
    np.cumsum(counts[used], out=off[1:])
    keys = [k for k, u in zip(uniq, used.tolist(), strict=True) if u]
    return Csr(keys, off, rows_all)


def merge_counts(base: Csr | None, delta: Mapping[str, int]) -> Csr:
    """Document frequencies: the base's plus the changes since, without zero entries."""
    if not delta and base is not None:
        return base
    merged: dict[str, int] = dict(zip(base.keys, base.data.tolist(), strict=True)) if base is not None else {}
    for token, change in delta.items():
        if change:
            merged[token] = merged.get(token, 0) + change
    keys = sorted(t for t, c in merged.items() if c > 0)
    return Csr(keys, np.zeros(0, dtype=np.int64), np.fromiter((merged[t] for t in keys), dtype=np.int64, count=len(keys)))


# ---------------------------------------------------------------------- writing


@dataclass
class Snapshot:
    """What :func:`write_generation` saves. The index takes it under its lock and then lets
    go (:meth:`~knowhub.index.embedded_persistence.PersistedCopy.checkpoint`), so everything
    here is a copy or does not change while it is written: ``records``/``payloads`` are
    built from a copy of the row table afterwards, ``vectors`` is a view of rows the index
    leaves alone until the save ends (``EmbeddedIndex._pinned``), and the tantivy segments
    are already in the staged generation (:func:`stage_generation`)."""

    ids: list[str | None]
    records: Sequence[bytes]
    payloads: Sequence[bytes]
    vectors: np.ndarray
    live: np.ndarray
    has_vec: np.ndarray
    has_tok: np.ndarray
    numbers: list[np.ndarray]
    postings: dict[str, Csr]
    parts: list[tuple[str, int, int, Csr]]  # name, docs, lexical docs, df


@dataclass
class Staged:
    """A generation being written: its directory holds each partition's tantivy segments,
    taken while the index was locked."""

    name: str
    tmp: Path
    previous: str | None
    #: segment files to copy from a stage folder (work directory on another filesystem)
    later: list[tuple[Path, Path]]


def _write(path: Path, data: bytes | memoryview) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _save_npy(path: Path, arr: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.lib.format.write_array(fh, np.ascontiguousarray(arr), allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


def _place(src: str | Path, dst: Path) -> None:
    """Hard-link ``src`` at ``dst``, or copy it (durably) from another filesystem."""
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copyfile(src, dst)
        with open(dst, "rb+") as fh:
            os.fsync(fh.fileno())


def _place_later(src: str, dst: Path, stage: Path, later: list[tuple[Path, Path]]) -> None:
    """Hard-link ``src`` at ``dst``; across filesystems (a work directory in RAM) link it
    into ``stage``, a folder beside its partition (same filesystem, so a merge cannot
    remove it), and note the copy for :func:`write_generation`, which makes it unlocked."""
    try:
        os.link(src, dst)
        return
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
    stage.mkdir(exist_ok=True)
    keep = stage / Path(src).name
    os.link(src, keep)
    later.append((keep, dst))


def link_segments(src: Path, dst: Path, saved: Mapping[str, Path], attempts: int = 5, *,
                  later: list[tuple[Path, Path]] | None = None) -> None:
    """Place the files of ``src``'s committed tantivy segments (and a copy of its
    ``meta.json``) in ``dst``: a segment file the current generation already holds
    (``saved``: name → path; segment files never change) is linked from there, others are
    linked or copied from ``src``. Retried when a background merge removes one meanwhile.
    With ``later`` (a save holding the index's lock) nothing is copied or synced here:
    copies are staged (:func:`_place_later`, in ``stage-<generation>-<tv_i>`` beside
    ``src``, started anew by every attempt and removed with a failure) and ``meta.json`` is
    synced by the caller."""
    stage = src.parent / f"stage-{dst.parent.name}-{dst.name}"
    for attempt in range(attempts):
        meta_bytes = (src / "meta.json").read_bytes()
        meta = orjson.loads(meta_bytes)
        prefixes = {str(s["segment_id"]).replace("-", "") for s in meta.get("segments", [])}
        shutil.rmtree(dst, ignore_errors=True)
        dst.mkdir(parents=True)
        staged: list[tuple[Path, Path]] = []
        if later is not None:
            shutil.rmtree(stage, ignore_errors=True)
        try:
            for entry in os.scandir(src):
                if entry.name.split(".", 1)[0] not in prefixes:
                    continue
                old = saved.get(entry.name)
                try:
                    if old is None:
                        raise FileNotFoundError(entry.name)
                    os.link(old, dst / entry.name)
                except FileNotFoundError:
                    if later is None:
                        _place(entry.path, dst / entry.name)
                    else:
                        _place_later(entry.path, dst / entry.name, stage, staged)
        except FileNotFoundError:
            if attempt == attempts - 1:
                shutil.rmtree(stage, ignore_errors=True)
                raise
            continue
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        if later is None:
            _write(dst / "meta.json", meta_bytes)
        else:
            later.extend(staged)
            (dst / "meta.json").write_bytes(meta_bytes)
        return


def stage_generation(root: Path, parts: Sequence[Path], known: Mapping[str, Any] | None) -> Staged:
    """Start a generation with what only the locked index can give: the committed segments
    of each partition's tantivy directory ``parts[i]`` (as ``tv_i``; hard links, a segment
    file never changes, so this is quick). Nothing is synced here: :func:`write_generation`
    syncs every file before the switch."""
    ensure_dir(root)
    try:
        previous = (read_manifest(root) or {}).get("generation")
    except (OSError, ValueError):
        previous = None
    previous = previous if isinstance(previous, str) else None
    saved = {}
    if previous is not None and (root / previous).is_dir():
        saved = {Path(rel).name: root / previous / rel for rel in (known or {}) if rel.startswith("tv_")}
    name = f"g-{time.time_ns():x}-{secrets.token_hex(3)}"
    tmp = root / f".tmp-{name}"
    tmp.mkdir()
    later: list[tuple[Path, Path]] = []
    try:
        for i, work in enumerate(parts):
            link_segments(work, tmp / f"tv_{i}", saved, later=later)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _drop_stage(later)
        raise
    return Staged(name, tmp, previous, later)


def _drop_stage(later: Sequence[tuple[Path, Path]]) -> None:
    for folder in {keep.parent for keep, _ in later}:
        shutil.rmtree(folder, ignore_errors=True)


def discard_staged(staged: Staged) -> None:
    """Remove a generation that will not be written (its save failed before the switch)."""
    shutil.rmtree(staged.tmp, ignore_errors=True)
    _drop_stage(staged.later)


def write_generation(root: Path, snap: Snapshot, staged: Staged, *, dim: int, number_fields: tuple[str, ...],
                     stamp: str, state: Mapping[str, Any] | None, known: Mapping[str, Any] | None) -> dict[str, Any]:
    """Write the rest of ``snap`` into the staged generation, sync it, switch the manifest
    to it and remove old ones; returns the new manifest. Runs without the index's lock."""
    name, tmp, previous = staged.name, staged.tmp, staged.previous
    try:
        for keep, dst in staged.later:
            _place(keep, dst)
        _drop_stage(staged.later)
        rows = len(snap.ids)
        for blob, chunks in (("records", snap.records), ("payloads", snap.payloads)):
            off = np.zeros(rows + 1, dtype=np.int64)
            np.cumsum(np.fromiter((len(r) for r in chunks), dtype=np.int64, count=rows), out=off[1:])
            _write(tmp / f"{blob}.bin", b"".join(chunks))
            _save_npy(tmp / f"{blob}.off.npy", off)
        _write(tmp / "ids.json", orjson.dumps(snap.ids))
        _save_npy(tmp / "vectors.npy", snap.vectors)
        for fname, arr in (("live", snap.live), ("has_vec", snap.has_vec), ("has_tok", snap.has_tok)):
            _save_npy(tmp / f"{fname}.npy", arr)
        for i, column in enumerate(snap.numbers):
            _save_npy(tmp / f"num_{i}.npy", column)
        for i, csr in enumerate(snap.postings.values()):
            _write(tmp / f"post_{i}.vals.json", orjson.dumps(csr.keys))
            _save_npy(tmp / f"post_{i}.off.npy", csr.off)
            _save_npy(tmp / f"post_{i}.rows.npy", csr.data)
        parts = []
        for i, (pname, docs, lexical, df) in enumerate(snap.parts):
            _write(tmp / f"df_{i}.toks.json", orjson.dumps(df.keys))
            _save_npy(tmp / f"df_{i}.cnt.npy", df.data)
            parts.append({"name": pname, "docs": docs, "lexical_docs": lexical})
        _write(tmp / "gen.json", orjson.dumps({"rows": rows, "fields": list(snap.postings), "parts": parts}))
        for i in range(len(snap.parts)):
            _fsync_file(tmp / f"tv_{i}" / "meta.json")
        files = {}
        for path in sorted(tmp.rglob("*")):
            if path.is_file():
                rel = path.relative_to(tmp).as_posix()
                files[rel] = _entry(path, known, rel)
        _make_private(tmp)
        for directory in (tmp, *(p for p in tmp.iterdir() if p.is_dir())):
            fsync_dir(directory)
        os.rename(tmp, root / name)
        fsync_dir(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _drop_stage(staged.later)
        raise
    manifest = {"format": FORMAT, "version": VERSION, "dim": dim, "number_fields": list(number_fields),
                "count": int(snap.live.sum()), "stamp": stamp, "generation": name, "files": files}
    if state is not None:
        manifest["state"] = dict(state)
    atomic_write_bytes(root / "manifest.json", orjson.dumps(manifest))
    remove_old_generations(root, keep={name, str(previous)})
    return manifest


def _make_private(tree: Path) -> None:
    """Owner-only modes on a generation being written: its files come from ``open`` and
    from tantivy (hard links share the working copy's inode), both filtered by the umask."""
    os.chmod(tree, DIR_MODE)
    for path in tree.rglob("*"):
        os.chmod(path, DIR_MODE if path.is_dir() else FILE_MODE)


def remove_old_generations(root: Path, keep: Iterable[str], *, grace_s: float | None = None) -> list[str]:
    """Delete generations and unfinished writes other than ``keep`` once they are old
    enough that no process can still be opening them; the files of the pre-generation
    format (``docs.jsonl``, ``vectors.npy``) go at once."""
    keep = set(keep)
    grace = _GEN_GRACE_S if grace_s is None else grace_s
    now = time.time()
    removed: list[str] = []
    for entry in os.scandir(root):
        if entry.name.startswith(("g-", ".tmp-g-")) and entry.name not in keep:
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime >= grace:
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(entry.name)
        elif entry.name in ("docs.jsonl", "vectors.npy"):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


# ---------------------------------------------------------------------- work directories


def _scratch(root: Path) -> tuple[Path, Path | None]:
    """Where work directories go, and the folder to clean: a RAM filesystem (``/dev/shm``)
    when it has room, so a tantivy commit costs no fsync (as the RAM index before
    generations), else ``work/`` beside the copy (hard links instead of copies).
    ``KNOWHUB_INDEX_SCRATCH`` names another folder, or ``local`` for ``work/``."""
    wanted = os.environ.get("KNOWHUB_INDEX_SCRATCH", "")
    if wanted == "local":
        return root / "work", None
    shm = Path(wanted or "/dev/shm")
    try:
        stat = os.statvfs(shm)
        if os.access(shm, os.W_OK) and stat.f_bavail * stat.f_frsize >= _SCRATCH_MIN_FREE:
            base = shm / f"knowhub-index-work-{os.getuid()}"
            base.mkdir(mode=0o700, exist_ok=True)
            own = base.lstat()
            # the copies hold private memories: only a folder of ours that no one else can read
            if own.st_uid == os.getuid() and S_ISDIR(own.st_mode) and not own.st_mode & 0o077:
                key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
                return base / key, base
    except OSError:
        pass
    return root / "work", None


class WorkDir:
    """This process's tantivy directories (``<scratch>/<pid>-<random>/``), locked while
    alive; see :func:`_scratch` for where."""

    def __init__(self, root: Path) -> None:
        base, shared = _scratch(root)
        # dead processes' directories go: this index's, and on a RAM filesystem every index's
        folders = [base] if shared is None or not shared.is_dir() else [p for p in shared.iterdir() if p.is_dir()]
        for folder in folders:
            self._clean(folder, remove_empty=shared is not None)
        self.path = base / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.path.mkdir(parents=True, mode=0o700)
        fd = os.open(self.path / "lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self._next = 0
        # removed with the index object or at exit; after a kill, by the next open's clean-up
        self._finalizer = weakref.finalize(self, _remove_work, self.path, fd)

    @staticmethod
    def _clean(base: Path, *, remove_empty: bool) -> None:
        """Remove work directories of processes that are gone (their lock is free)."""
        if not base.is_dir():
            return
        for entry in os.scandir(base):
            if not entry.is_dir():
                continue
            lock = Path(entry.path) / "lock"
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                with contextlib.suppress(OSError):
                    if time.time() - entry.stat().st_mtime > 60:
                        shutil.rmtree(entry.path, ignore_errors=True)
                continue
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # held by a live process
            try:
                shutil.rmtree(entry.path, ignore_errors=True)
            finally:
                os.close(fd)
        if remove_empty:
            with contextlib.suppress(OSError):
                base.rmdir()  # only when empty: an index folder nobody uses any more

    def new_part_dir(self, source: Path | None = None) -> Path:
        """A fresh directory for one partition's tantivy index, filled with hard links to
        ``source``'s files (a saved generation's ``tv_<i>``) when given."""
        self._next += 1
        target = self.path / f"p{self._next}"
        target.mkdir()
        if source is not None:
            names = []
            for entry in os.scandir(source):
                if entry.name == "meta.json":
                    shutil.copyfile(entry.path, target / entry.name)
                elif entry.name not in _TANTIVY_OWN:
                    _place(entry.path, target / entry.name)
                    names.append(entry.name)
            # tantivy may delete what it manages once a merge replaces it
            (target / ".managed.json").write_bytes(orjson.dumps(sorted([*names, "meta.json"])))
        return target

    def close(self) -> None:
        self._finalizer()


def _remove_work(path: Path, fd: int) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.close(fd)

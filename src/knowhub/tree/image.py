"""State image: the whole in-memory tree state in one file, so that an open skips the JSONL.

Opening a tree from its JSONL files decodes every row and builds every map in Python
(about 15 s at 1M nodes). The image (``indexes/state.img``) holds the same state in
columns: one list per field of the nodes, infos and links, the tombstone versions and the
four derived maps, encoded with :mod:`marshal` (builtin types only; about a third faster
to decode than pickle here, and unlike pickle it cannot refer to a class or function). Columns decode in
C and the node objects are built with one ``map`` over them, several times faster than
decoding and converting the rows.

The image is a cache of the change log, never the truth. Its header carries a
*fingerprint* of the files it reflects: the change-log offset, a hash of the 4 KiB of log
before that offset, and the size and a tail hash of each entity file. An image is used
only when the files still begin with what it saw (the files only grew since); then the
change-log records after its offset are replayed onto it (the follower path), which
brings an image older than the log up to date, whichever process wrote the tail. A
CRC32 over the payload catches a damaged file (it is checked before decoding); any
failure, or an image written by another Python version (the marshal format may change),
falls back to the JSONL load.
"""

from __future__ import annotations

import hashlib
import itertools
import marshal
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import orjson

from knowhub.storage import atomic_write_bytes
from knowhub.tree.models import Info, InfoKeywordLink, KeywordNode, RelationType, link_key

IMAGE_FILE = "state.img"
MAGIC = b"KHTREEIMG\n"
FORMAT = 1
TAIL_BYTES = 4096
_HEAD = struct.Struct("<I")
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
MAP_NAMES = ("inverted", "children", "info_by_kw", "kw_by_info")


class ImageError(Exception):
    """The image cannot be used (damaged, another format); the caller loads the JSONL."""


def image_path(data_dir: Path) -> Path:
    return data_dir / "indexes" / IMAGE_FILE


def tail_hash(path: Path, size: int) -> str:
    """Hash of the (up to) ``TAIL_BYTES`` bytes before ``size``; '' when the file is shorter."""
    start = max(0, size - TAIL_BYTES)
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(size - start)
    except FileNotFoundError:
        data = b""
    if len(data) != size - start:
        return ""
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def fingerprint(log_path: Path, log_offset: int, entity_paths: dict[str, Path]) -> dict[str, Any]:
    """What an image written now reflects: the change log up to ``log_offset`` and the
    entity files as they are (size and tail hash of each)."""
    sizes = {kind: _size(path) for kind, path in entity_paths.items()}
    return {
        "offset": int(log_offset),
        "log_tail": tail_hash(log_path, log_offset),
        "sizes": sizes,
        "tails": {kind: tail_hash(entity_paths[kind], size) for kind, size in sizes.items()},
    }


def stale_reason(fp: dict[str, Any], log_path: Path, entity_paths: dict[str, Path]) -> str:
    """'' when the files still begin with what the image saw (they may have grown since);
    otherwise why the image cannot be brought up to date by replaying the log."""
    try:
        offset = int(fp["offset"])
        if offset > _size(log_path) or tail_hash(log_path, offset) != fp["log_tail"]:
            return "the change log is not the one the image was taken from"
        for kind, path in entity_paths.items():
            size = int(fp["sizes"][kind])
            if size > _size(path) or tail_hash(path, size) != fp["tails"][kind]:
                return f"the {kind} file was rewritten after the image"
    except (KeyError, TypeError, ValueError) as exc:
        raise ImageError(f"malformed image fingerprint: {exc}") from exc
    return ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


# -- encoding --------------------------------------------------------------------------


def encode(state: Any, maps: dict[str, dict[str, list[str]]] | None, fingerprint: dict[str, Any], small_bucket: int) -> bytes:
    """The image of ``state`` with ``maps`` (sorted lists, as a rebuild makes them), or
    with the state's own maps when ``maps`` is None (the caller just rebuilt them)."""
    ns = list(state.nodes.values())
    ids = [n.id for n in ns]
    canon = {i: i for i in ids}  # parent ids share the node id's string object in the image
    nodes = (
        ids,
        [n.name for n in ns],
        [n.aliases for n in ns],
        [n.normalized for n in ns],
        [n.level for n in ns],
        [canon.get(n.parent_id, n.parent_id) for n in ns],
        [n.description for n in ns],
        [n.metadata for n in ns],
        [n.version for n in ns],
        [n.created_at for n in ns],
        [n.updated_at if n.updated_at != n.created_at else n.created_at for n in ns],
    )
    fs = list(state.infos.values())
    infos = (
        [i.id for i in fs],
        [i.content for i in fs],
        [i.source for i in fs],
        [i.metadata for i in fs],
        [i.version for i in fs],
        [i.created_at for i in fs],
        [i.updated_at for i in fs],
    )
    ls = list(state.links.values())
    links = (
        [link.info_id for link in ls],
        [canon.get(link.keyword_id, link.keyword_id) for link in ls],
        [link.relation.value for link in ls],
        [link.created_by for link in ls],
        [link.created_at for link in ls],
        [link.version for link in ls],
    )
    dead = [(kind, key, version) for (kind, key), version in state.dead_versions.items()]
    # node ids in the maps are the nodes' own id objects (rebuilt_maps takes node.id);
    # parent and keyword ids are mapped onto them, so the image stores each id once
    if maps is None:
        inverted, kw_by_info = state.inverted, state.kw_by_info
        children = {canon.get(k, k): v for k, v in state.children.items()}
        info_by_kw = {canon.get(k, k): v for k, v in state.info_by_kw.items()}
    else:
        # the bucket types of TreeState.adopt_maps: a sorted tuple, a dict when large
        inverted = {k: tuple(v) if len(v) <= small_bucket else dict.fromkeys(v) for k, v in maps["inverted"].items()}
        children = {canon.get(k, k): dict.fromkeys(v) for k, v in maps["children"].items()}
        info_by_kw = {canon.get(k, k): dict.fromkeys(v) for k, v in maps["info_by_kw"].items()}
        kw_by_info = {k: dict.fromkeys([canon.get(i, i) for i in v]) for k, v in maps["kw_by_info"].items()}
    return pack((FORMAT, nodes, infos, links, dead, inverted, children, info_by_kw, kw_by_info), fingerprint)


def pack(data: tuple[Any, ...], fingerprint: dict[str, Any]) -> bytes:
    """Magic, header (format, Python version, fingerprint, length, CRC32), payload."""
    payload = marshal.dumps(data, 4)
    head = orjson.dumps({"format": FORMAT, "python": PYTHON, "fingerprint": fingerprint,
                         "length": len(payload), "crc32": zlib.crc32(payload)})
    return b"".join((MAGIC, _HEAD.pack(len(head)), head, payload))


def write(data_dir: Path, state: Any, maps: dict[str, dict[str, list[str]]] | None, fingerprint: dict[str, Any], small_bucket: int) -> None:
    """Replace the image atomically (not fsynced: a torn image fails its CRC and is rebuilt)."""
    atomic_write_bytes(image_path(data_dir), encode(state, maps, fingerprint, small_bucket), durable=False)


# -- decoding --------------------------------------------------------------------------


def read_header(path: Path) -> tuple[dict[str, Any], int] | None:
    """``(header, payload offset)``; None when there is no image; ImageError when damaged."""
    try:
        with open(path, "rb") as fh:
            lead = fh.read(len(MAGIC) + _HEAD.size)
            if len(lead) < len(MAGIC) + _HEAD.size or lead[: len(MAGIC)] != MAGIC:
                raise ImageError("not a state image")
            (head_len,) = _HEAD.unpack(lead[len(MAGIC) :])
            head = orjson.loads(fh.read(head_len))
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ImageError(f"unreadable image header: {exc}") from exc
    if not isinstance(head, dict) or head.get("format") != FORMAT or not isinstance(head.get("fingerprint"), dict):
        raise ImageError("state image of another format")
    if head.get("python") != PYTHON:
        raise ImageError(f"state image written by Python {head.get('python')}, this is {PYTHON}")
    return head, len(MAGIC) + _HEAD.size + head_len


def read_payload(path: Path, head: dict[str, Any], offset: int) -> tuple[Any, ...]:
    """The decoded payload tuple after its length and CRC were checked."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            payload = fh.read()
    except OSError as exc:
        raise ImageError(f"unreadable image: {exc}") from exc
    if len(payload) != head.get("length") or zlib.crc32(payload) != head.get("crc32"):
        raise ImageError("state image is damaged (length or CRC32 mismatch)")
    try:
        data = marshal.loads(payload)
    except (ValueError, EOFError, TypeError) as exc:
        raise ImageError(f"undecodable image: {exc}") from exc
    if not isinstance(data, tuple) or len(data) != 5 + len(MAP_NAMES) or data[0] != FORMAT:
        raise ImageError("state image of another format")
    return data


def install(state: Any, data: tuple[Any, ...]) -> None:
    """Fill an empty ``state`` from a decoded payload (maps included)."""
    try:
        _fmt, nodes, infos, links, dead, *maps = data
        (ids, names, aliases, normalized, levels, parents, descriptions, metadata, versions, created, updated) = nodes
        # one fresh children list per node (``iter(list, None)`` calls list() each time)
        state.nodes = dict(zip(ids, map(KeywordNode, ids, names, aliases, normalized, levels, parents,
                                        iter(list, None), descriptions, metadata, versions, created, updated,
                                        itertools.repeat(False)), strict=True))
        (i_ids, contents, sources, i_meta, i_versions, i_created, i_updated) = infos
        state.infos = dict(zip(i_ids, map(Info, i_ids, contents, sources, i_meta, i_versions, i_created, i_updated,
                                          itertools.repeat(False)), strict=True))
        relation = {r.value: r for r in RelationType}
        l_info, l_kw, l_rel, l_by, l_created, l_versions = links
        state.links = {
            link_key(info_id, kw_id): InfoKeywordLink(info_id, kw_id, relation[rel], by, at, False, version)
            for info_id, kw_id, rel, by, at, version in zip(l_info, l_kw, l_rel, l_by, l_created, l_versions, strict=True)
        }
        state.dead_versions = {(kind, key): version for kind, key, version in dead}
        state.inverted, state.children, state.info_by_kw, state.kw_by_info = maps
    except (ValueError, TypeError, KeyError) as exc:
        raise ImageError(f"state image does not have the expected shape: {exc}") from exc
    state.children_dirty = set(state.nodes)


def maps_of(data: tuple[Any, ...]) -> dict[str, dict[str, list[str]]]:
    """The four maps of a decoded payload as sorted lists (the shape ``check`` compares)."""
    return {name: {k: list(v) for k, v in m.items()} for name, m in zip(MAP_NAMES, data[5:], strict=True)}


__all__ = [
    "IMAGE_FILE",
    "ImageError",
    "fingerprint",
    "image_path",
    "install",
    "maps_of",
    "pack",
    "read_header",
    "read_payload",
    "stale_reason",
    "tail_hash",
    "write",
]

"""Portable export and import of every engine as JSON lines.

An export is a directory (or the same files in a ``.tar.gz``)::

    manifest.json      format, versions, counts per file, how secrets were written
    tree.jsonl         {"kind": "node"|"info"|"link", ...row}   (parents before children)
    knowledge.jsonl    one knowledge item per line, the full seed-002 JSON incl. eval and
                       helpful/harmful histories, owner, scopes, version, timestamps
    resources.jsonl    one resource per line; ``secure_body`` see below
    context.jsonl      one context node per line by URI: L0/L1/L2, meta and relations

Secrets (``secure_body`` of resources) are **omitted by default** (the line says
``"secure_body": {"mode": "omitted"}`` and the export warns). ``passphrase=...`` writes them
encrypted with AES-256-GCM under a key derived from the passphrase with scrypt (salt in
the manifest); ``include_secrets=True`` without a passphrase writes them in plain text.

Import goes through the engines' write APIs: tree ``batch_create_keywords`` /
``batch_create_infos`` / ``link_info`` (ids kept), knowledge store writes (the whole item
kept, then the hub's indexes rebuilt), ``save_resource`` as the resource's owner, and
``ContextFS.write_node`` (then the context index is rebuilt). Fields the engines manage
themselves on every write are regenerated: :data:`VOLATILE_FIELDS` lists them per file, and
the round-trip test compares exports without them.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import tarfile
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from sqlalchemy import select

from knowhub import __version__
from knowhub.errors import CorruptStoreError, InvalidInputError, NotFoundError
from knowhub.ops.engines import Engines
from knowhub.scope import Principal, RequestContext, needs_publish_right
from knowhub.storage import atomic_write_json, ensure_dir, fsync_dir, open_private, restore_snapshot

FORMAT = "knowhub-export"
FORMAT_VERSION = 1
EXPORT_FILES: tuple[str, ...] = ("tree.jsonl", "knowledge.jsonl", "resources.jsonl", "context.jsonl")
#: Fields an engine sets itself on every write; an import cannot carry them over.
VOLATILE_FIELDS: dict[str, frozenset[str]] = {
    "tree.jsonl": frozenset({"version", "created_at", "updated_at", "created_by"}),
    "knowledge.jsonl": frozenset(),
    "resources.jsonl": frozenset({"version", "created_at", "updated_at"}),
    "context.jsonl": frozenset({"version", "created_at", "updated_at"}),
}
_BATCH = 500
_INDEXER_USER = "_indexer"

Progress = Callable[[str, int, int | None], None]


def _noop(_stage: str, _advance: int, _total: int | None) -> None:
    return None


@dataclass
class ExportOptions:
    """How secrets are written (see the module doc)."""

    include_secrets: bool = False
    passphrase: str | None = None

    @property
    def secrets_mode(self) -> str:
        if self.passphrase:
            return "passphrase"
        return "plaintext" if self.include_secrets else "omitted"


# --------------------------------------------------------------------------- secrets


def _derive_key(passphrase: str, salt: bytes) -> bytes:
    return Scrypt(salt=salt, length=32, n=2**15, r=8, p=1).derive(passphrase.encode("utf-8"))


def _seal(aead: AESGCM, plaintext: str, resource_id: str) -> dict[str, str]:
    nonce = secrets.token_bytes(12)
    sealed = aead.encrypt(nonce, plaintext.encode("utf-8"), resource_id.encode("utf-8"))
    return {"mode": "passphrase", "nonce": base64.b64encode(nonce).decode(), "ciphertext": base64.b64encode(sealed).decode()}


def _open_sealed(aead: AESGCM, doc: dict[str, Any], resource_id: str) -> str:
    try:
        nonce = base64.b64decode(doc["nonce"])
        plain = aead.decrypt(nonce, base64.b64decode(doc["ciphertext"]), resource_id.encode("utf-8"))
    except InvalidTag as exc:
        raise InvalidInputError("cannot decrypt secrets: wrong passphrase", id=resource_id) from exc
    except (KeyError, ValueError, TypeError) as exc:
        raise InvalidInputError("malformed encrypted secure_body", id=resource_id) from exc
    return plain.decode("utf-8")


# --------------------------------------------------------------------------- writing


class _JsonlWriter:
    """Appends JSON lines to one export file and counts them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC)
        self._fh = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, ensure_ascii=False, sort_keys=True))
        self._fh.write("\n")
        self.count += 1

    def close(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()


def _export_tree(tree: Any, out: _JsonlWriter, progress: Progress) -> None:
    tree.stats()  # brings the in-memory state up to date with other writers
    state = tree.state
    nodes = sorted((n for n in state.nodes.values() if n.id != "root"), key=lambda n: (n.level, n.id))
    total = len(nodes) + len(state.infos) + len(state.links)
    progress("tree", 0, total)
    for node in nodes:
        out.write({"kind": "node", **node.to_row()})
        progress("tree", 1, None)
    for info in sorted(state.infos.values(), key=lambda i: i.id):
        out.write({"kind": "info", **info.to_row()})
        progress("tree", 1, None)
    for link in sorted(state.links.values(), key=lambda x: (x.info_id, x.keyword_id)):
        out.write({"kind": "link", **link.to_row()})
        progress("tree", 1, None)


def _export_knowledge(hub: Any, items: _JsonlWriter, res_out: _JsonlWriter, options: ExportOptions,
                      salt: bytes, progress: Progress) -> tuple[int, list[str]]:
    from knowhub.knowledge.store import resources as resources_table

    store = hub.store
    with store.read() as conn:
        total = store.count_live(conn)
        progress("knowledge", 0, total)
        for batch in store.iter_live(conn):
            for item in batch:
                items.write(item.to_dict())
            progress("knowledge", len(batch), None)
        ids = [r.id for r in conn.execute(
            select(resources_table.c.id).where(resources_table.c.deleted == 0).order_by(resources_table.c.id))]
        records = [store.load_resource(conn, rid) for rid in ids]
    aead = AESGCM(_derive_key(options.passphrase, salt)) if options.passphrase else None
    omitted = 0
    quarantined: list[str] = []
    progress("resources", 0, len(records))
    for record in records:
        if record is None:
            continue
        doc = {k: record[k] for k in ("id", "title", "body", "content_type", "metadata", "owner", "scopes",
                                      "version", "created_at", "updated_at")}
        if record["secure_body"] is None:
            doc["secure_body"] = None
        elif options.secrets_mode == "omitted":
            doc["secure_body"] = {"mode": "omitted"}
            omitted += 1
        else:
            try:
                plain = hub.resources.decrypt(record)
            except CorruptStoreError:  # quarantined by decrypt: report it, export the rest
                doc["secure_body"] = {"mode": "quarantined"}
                quarantined.append(record["id"])
            else:
                doc["secure_body"] = _seal(aead, plain, record["id"]) if aead else {"mode": "plaintext", "value": plain}
        res_out.write(doc)
        progress("resources", 1, None)
    return omitted, quarantined


def _export_context(service: Any, out: _JsonlWriter, progress: Progress) -> None:
    pairs = sorted(service.indexer.iter_node_uris(), key=lambda p: p[1])
    progress("context", 0, len(pairs))
    seen: set[str] = set()
    for ctx, uri in pairs:
        if uri in seen:
            continue
        seen.add(uri)
        try:
            node = service.fs.read_node(ctx, uri)
        except NotFoundError:
            continue
        edges = service.relations.get_edges(ctx, uri)
        out.write({
            "uri": node.uri,
            "context_type": str(node.context_type),
            "category": None if node.category is None else str(node.category),
            "owner_space": node.owner_space,
            "abstract": node.abstract,
            "overview": node.overview,
            "content": node.content,
            "metadata": node.metadata,
            "version": node.version,
            "created_at": node.created_at,
            "updated_at": node.updated_at,
            "relations": sorted((e.to_dict() for e in edges), key=lambda e: (e["to_uri"], e["relation_type"])),
        })
        progress("context", 1, None)


def export_all(engines: Engines, dest: str | os.PathLike[str], options: ExportOptions | None = None,
               *, progress: Progress = _noop) -> dict[str, Any]:
    """Write the portable export of the open engines to ``dest`` (a new or empty directory,
    or a path ending in ``.tar.gz``); returns the manifest."""
    options = options or ExportOptions()
    target = Path(dest)
    archive = target.name.endswith(".tar.gz")
    if archive:
        if target.exists():
            raise InvalidInputError(f"export archive already exists: {target}", path=str(target))
        ensure_dir(target.parent)
        work = Path(tempfile.mkdtemp(prefix=".knowhub-export-", dir=target.parent))
    else:
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise InvalidInputError(f"export directory is not empty: {target}", path=str(target))
        ensure_dir(target)
        work = target
    try:
        salt = secrets.token_bytes(16)
        writers = {name: _JsonlWriter(work / name) for name in EXPORT_FILES}
        omitted, quarantined = 0, []
        try:
            if engines.tree is not None:
                _export_tree(engines.tree, writers["tree.jsonl"], progress)
            if engines.knowledge is not None:
                omitted, quarantined = _export_knowledge(engines.knowledge, writers["knowledge.jsonl"],
                                            writers["resources.jsonl"], options, salt, progress)
            if engines.context is not None:
                _export_context(engines.context, writers["context.jsonl"], progress)
        finally:
            for writer in writers.values():
                writer.close()
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "knowhub_version": __version__,
            "created_at": datetime.now(UTC).isoformat(),
            "engines": [name for name, _ in engines.items()],
            "counts": {name: w.count for name, w in writers.items()},
            "tree_counts": _tree_counts(work / "tree.jsonl"),
            "secrets": {"mode": options.secrets_mode, "omitted": omitted, "quarantined": quarantined},
        }
        if options.passphrase:
            manifest["secrets"].update({"kdf": "scrypt", "n": 2**15, "r": 8, "p": 1,
                                        "salt": base64.b64encode(salt).decode(), "cipher": "AES-256-GCM"})
        atomic_write_json(work / "manifest.json", manifest)
        fsync_dir(work)
        if archive:
            partial = target.with_name(target.name + ".partial")
            with os.fdopen(open_private(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC), "wb") as raw:
                with tarfile.open(fileobj=raw, mode="w:gz") as tar:
                    for name in ("manifest.json", *EXPORT_FILES):
                        tar.add(work / name, arcname=name)
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(partial, target)
            fsync_dir(target.parent)
        return manifest
    finally:
        if archive:
            shutil.rmtree(work, ignore_errors=True)


def _tree_counts(path: Path) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for record in _iter_jsonl(path):
        counts[str(record.get("kind"))] += 1
    return dict(counts)


# --------------------------------------------------------------------------- reading


def _iter_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with path.open("r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{path.name} line {lineno}: not JSON", path=str(path), line=lineno) from exc
            if not isinstance(record, dict):
                raise InvalidInputError(f"{path.name} line {lineno}: not a JSON object", path=str(path), line=lineno)
            yield record


class read_export:
    """Context manager giving the directory of an export (a ``.tar.gz`` is unpacked safely
    into a temporary directory first) and its manifest."""

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self.source = Path(source)
        self._tmp: Path | None = None

    def __enter__(self) -> tuple[Path, dict[str, Any]]:
        if not self.source.exists():
            raise NotFoundError(f"export not found: {self.source}", path=str(self.source))
        if self.source.is_file():
            self._tmp = Path(tempfile.mkdtemp(prefix=".knowhub-import-"))
            # An export carries its own manifest.json (checked below), not a snapshot's.
            directory = restore_snapshot(self.source, self._tmp / "export", verify=False)
        else:
            directory = self.source
        manifest_path = directory / "manifest.json"
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise InvalidInputError(f"not a knowhub export (no manifest.json): {self.source}") from exc
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"manifest.json is not JSON: {self.source}") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise InvalidInputError(f"not a knowhub export: {self.source}")
        if int(manifest.get("format_version", 0)) > FORMAT_VERSION:
            raise InvalidInputError(
                f"export format {manifest.get('format_version')} is newer than this knowhub ({FORMAT_VERSION})")
        return directory, manifest

    def __exit__(self, *exc: object) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


# --------------------------------------------------------------------------- importing


def _engine_is_empty(name: str, engine: Any) -> bool:
    if name == "tree":
        stats = engine.stats()
        return int(stats.get("nodes", 0)) <= 1 and int(stats.get("infos", 0)) == 0
    if name == "knowledge":
        from knowhub.knowledge.store import resources as resources_table

        with engine.store.read() as conn:
            if engine.store.count_live(conn):
                return False
            return conn.execute(select(resources_table.c.id).limit(1)).first() is None
    return not any(True for _ in engine.indexer.iter_node_uris())


def _import_tree(tree: Any, directory: Path, merge: bool, progress: Progress) -> dict[str, int]:
    records = list(_iter_jsonl(directory / "tree.jsonl"))
    progress("tree", 0, len(records))
    existing_nodes = set(tree.state.nodes)
    existing_infos = set(tree.state.infos)
    nodes = sorted((r for r in records if r.get("kind") == "node"), key=lambda r: int(r.get("level", 0)))
    specs = [{"id": r["id"], "name": r["name"], "aliases": r.get("aliases") or [], "description": r.get("description") or "",
              "metadata": r.get("metadata") or {}, "parent_id": r.get("parent_id") or "root"}
             for r in nodes if r["id"] not in existing_nodes]
    skipped = len(nodes) - len(specs)
    for start in range(0, len(specs), _BATCH):
        chunk = specs[start:start + _BATCH]
        tree.batch_create_keywords(chunk)
        progress("tree", len(chunk), None)
    links_by_info: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("kind") == "link":
            links_by_info[r["info_id"]].append(r)
    info_specs: list[dict[str, Any]] = []
    extra_links: list[dict[str, Any]] = []
    for r in records:
        if r.get("kind") != "info" or r["id"] in existing_infos:
            continue
        links = links_by_info.get(r["id"], [])
        main = Counter(link["relation"] for link in links).most_common(1)[0][0] if links else "PRIMARY"
        info_specs.append({"id": r["id"], "content": r["content"], "source": r.get("source") or "",
                           "metadata": r.get("metadata") or {}, "relation": main,
                           "keyword_ids": [link["keyword_id"] for link in links if link["relation"] == main]})
        extra_links.extend(link for link in links if link["relation"] != main)
    for start in range(0, len(info_specs), _BATCH):
        chunk = info_specs[start:start + _BATCH]
        tree.batch_create_infos(chunk)
        progress("tree", len(chunk) + sum(len(s["keyword_ids"]) for s in chunk), None)
    for link in extra_links:
        tree.link_info(link["info_id"], link["keyword_id"], link["relation"], link.get("created_by") or "user")
        progress("tree", 1, None)
    return {"nodes": len(specs), "infos": len(info_specs), "skipped_existing": skipped}


def _import_knowledge(hub: Any, directory: Path, manifest: dict[str, Any], merge: bool, passphrase: str | None,
                      progress: Progress) -> dict[str, int]:
    from knowhub.knowledge.models import Knowledge

    store = hub.store
    items = list(_iter_jsonl(directory / "knowledge.jsonl"))
    progress("knowledge", 0, len(items))
    written = skipped = 0
    for start in range(0, len(items), _BATCH):
        chunk = items[start:start + _BATCH]
        with store.write() as conn:
            for doc in chunk:
                item = Knowledge.from_dict(doc)
                if store.load(conn, item.id) is not None:
                    skipped += 1
                    continue
                store.write_knowledge(conn, item)
                written += 1
        progress("knowledge", len(chunk), None)
    if written:
        hub.rebuild_indexes()
    resources = list(_iter_jsonl(directory / "resources.jsonl"))
    progress("resources", 0, len(resources))
    aead = _secrets_key(directory, manifest, passphrase)
    res_written = res_skipped = no_secret = 0
    for doc in resources:
        # The operator restores its own export: the owner keeps every scope it had,
        # including public and org: ones (a publish right granted for this import only).
        scopes = doc.get("scopes") or []
        owner = Principal.of(doc["owner"], scopes, scopes, [s for s in scopes if needs_publish_right(s)])
        try:
            hub.get_resource(owner, doc["id"])
            res_skipped += 1
            progress("resources", 1, None)
            continue
        except NotFoundError:
            pass
        body = {k: doc.get(k) for k in ("id", "title", "body", "content_type", "metadata", "owner", "scopes")}
        secure = doc.get("secure_body")
        if isinstance(secure, dict):
            mode = secure.get("mode")
            if mode == "plaintext":
                body["secure_body"] = secure.get("value")
            elif mode == "passphrase" and aead is not None:
                body["secure_body"] = _open_sealed(aead, secure, doc["id"])
            else:
                no_secret += 1
        hub.save_resource(owner, body)
        res_written += 1
        progress("resources", 1, None)
    return {"knowledge": written, "knowledge_skipped_existing": skipped, "resources": res_written,
            "resources_skipped_existing": res_skipped, "resources_without_secret": no_secret}


def _secrets_key(directory: Path, manifest: dict[str, Any], passphrase: str | None) -> AESGCM | None:
    """The key of a passphrase-encrypted export, verified on its first secret.

    Raises:
        InvalidInputError: no passphrase for an encrypted export, or a wrong one.
    """
    secrets_doc = manifest.get("secrets") or {}
    if secrets_doc.get("mode") != "passphrase":
        return None
    if not passphrase:
        raise InvalidInputError("this export holds secrets encrypted with a passphrase: give the passphrase")
    try:
        salt = base64.b64decode(secrets_doc["salt"])
    except (KeyError, ValueError, TypeError) as exc:
        raise InvalidInputError("manifest.json: malformed secrets salt") from exc
    aead = AESGCM(_derive_key(passphrase, salt))
    for doc in _iter_jsonl(directory / "resources.jsonl"):
        secure = doc.get("secure_body")
        if isinstance(secure, dict) and secure.get("mode") == "passphrase":
            _open_sealed(aead, secure, str(doc.get("id")))
            break
    return aead


def _ctx_for(uri: str) -> RequestContext:
    from knowhub.context.core.uri import parse_uri

    parsed = parse_uri(uri)
    segs = parsed.segments
    user = segs[1] if len(segs) >= 2 and segs[0] == "users" else _INDEXER_USER
    agent = segs[1] if len(segs) >= 2 and segs[0] == "agents" else "default"
    return RequestContext(parsed.account, user, agent_id=agent)


def _import_context(service: Any, directory: Path, merge: bool, progress: Progress) -> dict[str, int]:
    from knowhub.context.core.objects import ContextNode, RelationEdge

    records = list(_iter_jsonl(directory / "context.jsonl"))
    progress("context", 0, len(records))
    written = skipped = 0
    for doc in records:
        ctx = _ctx_for(doc["uri"])
        if service.fs.exists(ctx, doc["uri"]):
            skipped += 1
            progress("context", 1, None)
            continue
        node = ContextNode(uri=doc["uri"], parent_uri=None, context_type=doc.get("context_type") or "memory",
                           category=doc.get("category"), owner_space=doc.get("owner_space"),
                           abstract=doc.get("abstract") or "", overview=doc.get("overview") or "",
                           content=doc.get("content") or "", metadata=dict(doc.get("metadata") or {}))
        edges = [RelationEdge.from_dict(e) for e in doc.get("relations") or []]
        service.fs.write_node(ctx, node, edges=edges)
        written += 1
        progress("context", 1, None)
    if written:
        service.rebuild_index()
        service.save_index()
    return {"nodes": written, "skipped_existing": skipped}


def import_all(engines: Engines, source: str | os.PathLike[str], *, merge: bool = False,
               passphrase: str | None = None, progress: Progress = _noop) -> dict[str, Any]:
    """Read an export into the open engines.

    Without ``merge`` every engine must be empty (a fresh data dir); with it, records whose
    id/URI already exists are skipped (the data dir's version wins).

    Raises:
        InvalidInputError: not an export, an engine is not empty, or a wrong passphrase.
    """
    with read_export(source) as (directory, manifest):
        if engines.knowledge is not None:
            _secrets_key(directory, manifest, passphrase)  # a wrong passphrase fails before any write
        if not merge:
            full = [name for name, engine in engines.items() if not _engine_is_empty(name, engine)]
            if full:
                raise InvalidInputError(
                    f"the data dir already holds {', '.join(full)} data: import into an empty data dir or use --merge")
        report: dict[str, Any] = {"manifest_counts": manifest.get("counts", {})}
        if engines.tree is not None:
            report["tree"] = _import_tree(engines.tree, directory, merge, progress)
        if engines.knowledge is not None:
            report["knowledge"] = _import_knowledge(engines.knowledge, directory, manifest, merge, passphrase, progress)
        if engines.context is not None:
            report["context"] = _import_context(engines.context, directory, merge, progress)
        return report


def comparable(directory: Path) -> dict[str, list[dict[str, Any]]]:
    """The records of an export without :data:`VOLATILE_FIELDS`, sorted (round-trip checks)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in EXPORT_FILES:
        drop = VOLATILE_FIELDS[name]
        rows = [{k: v for k, v in r.items() if k not in drop} for r in _iter_jsonl(directory / name)]
        out[name] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False))
    return out


__all__ = [
    "EXPORT_FILES",
    "FORMAT",
    "FORMAT_VERSION",
    "VOLATILE_FIELDS",
    "ExportOptions",
    "comparable",
    "export_all",
    "import_all",
    "read_export",
]

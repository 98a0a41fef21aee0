"""Resources (seed 002 "Resource 引用机制"): code, credentials, cookies, with encrypted secrets.

``secure_body`` is encrypted with AES-GCM before it reaches the store and in the version
history; it is decrypted only for ``get_resource(..., include_secure=True)`` by a principal
that may modify the resource. Reads by principals that cannot see the resource answer
NotFoundError, exactly like a missing id.
"""

from __future__ import annotations

import base64
import builtins
import json
from typing import Any

from knowhub.errors import (
    CorruptStoreError,
    NotFoundError,
    PermissionDeniedError,
    StorageError,
    VersionConflictError,
)
from knowhub.knowledge.models import Resource, check_limit, check_resource_id, utc_now
from knowhub.knowledge.resource_checks import (
    check_content_type,
    check_resource_body,
    check_resource_patch,
)
from knowhub.knowledge.secrets import SecretBox
from knowhub.knowledge.store import KnowledgeStore
from knowhub.scope import Principal

__all__ = ["ResourceService"]


class ResourceService:
    """Resource CRUD with visibility, ownership and secret handling."""

    def __init__(self, store: KnowledgeStore, box: SecretBox) -> None:
        self.store = store
        self._box = box

    @staticmethod
    def _public(record: dict[str, Any]) -> Resource:
        return Resource(
            id=record["id"],
            title=record["title"],
            body=record["body"],
            content_type=record["content_type"],
            owner=record["owner"],
            scopes=list(record["scopes"]),
            metadata=dict(record["metadata"]),
            has_secure_body=record["secure_body"] is not None,
            created_at=record["created_at"],
            updated_at=record["updated_at"],
            version=int(record["version"]),
        )

    @staticmethod
    def _not_found(resource_id: str) -> NotFoundError:
        return NotFoundError(f"resource not found: {resource_id}", id=resource_id)

    def save(self, principal: Principal, body: Any) -> Resource:
        """Create a resource, or replace one the principal may modify."""
        clean = check_resource_body(body, principal)
        resource_id = clean["id"]
        now = utc_now()
        with self.store.write() as conn:
            existing = self.store.load_resource(conn, resource_id)
            record = {
                **clean,
                "secure_body": None
                if clean["secure_body"] is None
                else self._box.encrypt(clean["secure_body"], resource_id),
                "version": 1,
                "created_at": now,
                "updated_at": now,
                "deleted": False,
            }
            if existing is not None:
                if not principal.can_modify(existing["owner"], existing["scopes"]):
                    if not existing["deleted"] and principal.can_see(existing["scopes"]):
                        raise PermissionDeniedError(
                            f"only the owner may replace resource {resource_id}", id=resource_id
                        )
                    raise VersionConflictError(
                        f"resource id {resource_id!r} is already in use", id=resource_id
                    )
                self.store.add_resource_version(
                    conn, existing, kind="replace", principal=principal.id, at=now
                )
                record["version"] = existing["version"] + 1
                if not existing["deleted"]:
                    record["created_at"] = existing["created_at"]
            self.store.write_resource(conn, record)
        return self._public(record)

    def _visible(self, conn: Any, principal: Principal, resource_id: str) -> dict[str, Any]:
        record = self.store.load_resource(conn, resource_id)
        if record is None or record["deleted"] or not principal.can_see(record["scopes"]):
            raise self._not_found(resource_id)
        return record

    def get(
        self, principal: Principal, resource_id: str, *, include_secure: bool = False
    ) -> Resource:
        """A visible resource; its secret only with ``include_secure`` and modify rights."""
        resource_id = check_resource_id(resource_id)
        with self.store.read() as conn:
            record = self._visible(conn, principal, resource_id)
        resource = self._public(record)
        if include_secure:
            if not principal.can_modify(record["owner"], record["scopes"]):
                raise PermissionDeniedError(
                    f"only the owner or a scope admin may read the secure body of {resource_id}",
                    id=resource_id,
                )
            if record["secure_body"] is not None:
                resource.secure_body = self.decrypt(record)
        return resource

    def decrypt(self, record: dict[str, Any]) -> str:
        """The plaintext secret of a stored record.

        Raises:
            CorruptStoreError: the ciphertext cannot be decrypted (damaged, or another
                key); a copy of the record is kept in the knowledge quarantine (once per
                version) and the error names the resource, never the key or the bytes.
        """
        try:
            return self._box.decrypt(record["secure_body"], record["id"])
        except StorageError as exc:
            entry = self.quarantine_secret(record, exc.message)
            raise CorruptStoreError(
                f"the secret of resource {record['id']} cannot be decrypted; a copy is in "
                f"quarantine ({entry}); its other fields are intact",
                id=record["id"],
                quarantine=entry,
            ) from exc

    def quarantine_secret(self, record: dict[str, Any], reason: str) -> str:
        """Keep the undecryptable record in the quarantine (idempotent); its entry id."""
        origin = f"resource:{record['id']}@v{record['version']}"
        quarantine = self.store.damaged.quarantine
        for entry in quarantine.entries():
            if entry.get("origin") == origin:
                return str(entry["id"])
        doc = {k: v for k, v in record.items() if k != "secure_body"}
        doc["secure_body_b64"] = base64.b64encode(record["secure_body"]).decode("ascii")
        data = json.dumps(doc, ensure_ascii=False, default=str).encode("utf-8")
        return str(quarantine.keep("resource.json", data, reason, kind="secret", origin=origin)["id"])

    def list(
        self, principal: Principal, limit: int = 50, content_type: str | None = None
    ) -> list[Resource]:
        """Visible resources, most recently changed first; never with secrets."""
        limit = check_limit(limit)
        kind = None if content_type is None else check_content_type(content_type)
        with self.store.read() as conn:
            records = self.store.list_resources(
                conn, visible=principal.visible_scopes, limit=limit, content_type=kind
            )
        return [self._public(r) for r in records]

    def update(self, principal: Principal, resource_id: str, patch: Any) -> Resource:
        """Patch title, body, secure_body (None removes it), content_type, metadata, scopes."""
        resource_id = check_resource_id(resource_id)
        clean = check_resource_patch(patch, principal)
        now = utc_now()
        with self.store.write() as conn:
            record = self._visible(conn, principal, resource_id)
            self._require_modify(principal, record)
            self.store.add_resource_version(
                conn, record, kind="update", principal=principal.id, at=now
            )
            updated = {**record, **clean, "version": record["version"] + 1, "updated_at": now}
            if "secure_body" in clean:
                value = clean["secure_body"]
                updated["secure_body"] = (
                    None if value is None else self._box.encrypt(value, resource_id)
                )
            self.store.write_resource(conn, updated)
        return self._public(updated)

    def delete(self, principal: Principal, resource_id: str) -> None:
        """Soft-delete (the row stays, encrypted, in the version history)."""
        resource_id = check_resource_id(resource_id)
        now = utc_now()
        with self.store.write() as conn:
            record = self._visible(conn, principal, resource_id)
            self._require_modify(principal, record)
            self.store.add_resource_version(
                conn, record, kind="delete", principal=principal.id, at=now
            )
            self.store.write_resource(
                conn,
                {**record, "deleted": True, "version": record["version"] + 1, "updated_at": now},
            )

    def history(self, principal: Principal, resource_id: str) -> builtins.list[dict[str, Any]]:
        """Previous versions (without secrets) of a resource the principal can see."""
        resource_id = check_resource_id(resource_id)
        with self.store.read() as conn:
            record = self.store.load_resource(conn, resource_id)
            if record is None or not principal.can_see(record["scopes"]):
                raise self._not_found(resource_id)
            versions = self.store.resource_history(conn, resource_id)
        out = []
        for version in versions:
            previous = version.pop("record")
            if not principal.can_see(previous["scopes"]):
                continue
            version["was_deleted"] = bool(previous.get("deleted"))
            version["snapshot"] = self._public(previous).to_dict()
            out.append(version)
        return out

    def undo(self, principal: Principal, change_id: Any) -> Resource:
        """Write the version saved under ``change_id`` back as a new version (owner/admin)."""
        if not isinstance(change_id, str) or not change_id or len(change_id) > 64:
            raise NotFoundError("resource change not found", change_id=str(change_id)[:80])
        now = utc_now()
        with self.store.write() as conn:
            version = self.store.resource_change(conn, change_id)
            current = (
                None if version is None else self.store.load_resource(conn, version["resource_id"])
            )
            if version is None or current is None or not principal.can_see(current["scopes"]):
                raise NotFoundError(f"resource change not found: {change_id}", change_id=change_id)
            self._require_modify(principal, current)
            self.store.add_resource_version(
                conn, current, kind="undo", principal=principal.id, at=now
            )
            restored = {
                **version["record"],
                "id": current["id"],
                "version": current["version"] + 1,
                "updated_at": now,
            }
            self.store.write_resource(conn, restored)
        return self._public(restored)

    @staticmethod
    def _require_modify(principal: Principal, record: dict[str, Any]) -> None:
        if not principal.can_modify(record["owner"], record["scopes"]):
            raise PermissionDeniedError(
                f"only the owner or a scope admin may change resource {record['id']}",
                id=record["id"],
            )

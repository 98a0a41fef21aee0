"""Info writes (seed 000 §5.5): create (explicit links and auto_link), update, delete,
link/unlink, and the batch form. One operation each."""

from __future__ import annotations

from typing import Any

from knowhub.errors import InvalidInputError, NotFoundError, VersionConflictError
from knowhub.tree.keyword_writes import KeywordWritesMixin
from knowhub.tree.models import ROOT_ID, Info, RelationType, WriteResult, new_id
from knowhub.tree.txn import Txn

INFO_PATCH_KEYS = frozenset({"content", "source", "metadata"})
CREATED_BY = ("user", "agent", "auto_link")


class InfoWritesMixin(KeywordWritesMixin):
    """Infos and their keyword links."""

    def _exact_hits(self, content: str) -> dict[str, str]:
        """Keywords whose name or alias occurs in ``content`` (exact, normalized) → matched text."""
        hits: dict[str, str] = {}
        for match in self.matcher.find(content):
            for node_id in sorted(match.values):
                if node_id in self.state.nodes and node_id != ROOT_ID and node_id not in hits:
                    hits[node_id] = match.pattern
        return hits

    def _auto_links(self, content: str, use_agent: bool = True) -> tuple[dict[str, RelationType], list[dict[str, Any]]]:
        hits = self._exact_hits(content)
        if not hits:
            return {}, []
        if not use_agent:
            return dict.fromkeys(hits, RelationType.RELATED), []
        chosen, io = self._link_decision(content, hits)
        return chosen, [io]

    @staticmethod
    def _clean_content(content: Any) -> str:
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError("info content must be a non-empty string")
        return content

    def _keyword_ids(self, keyword_ids: Any) -> list[str]:
        if keyword_ids is None:
            return []
        if isinstance(keyword_ids, str) or not isinstance(keyword_ids, (list, tuple)):
            raise InvalidInputError("keyword_ids must be a list of ids")
        out = list(dict.fromkeys(keyword_ids))
        for kw in out:
            self._node_or_raise(kw)
        return out

    def _stage_info(
        self,
        txn: Txn,
        content: str,
        source: str,
        metadata: dict[str, Any],
        links: dict[str, tuple[RelationType, str]],
        info_id: str | None = None,
    ) -> dict[str, Any]:
        row = txn.put("info", Info(id=info_id or new_id(), content=content, source=source, metadata=metadata).to_row())
        for kw_id, (relation, created_by) in links.items():
            txn.put(
                "link",
                {"info_id": row["id"], "keyword_id": kw_id, "relation": relation.value, "created_by": created_by, "created_at": txn.now, "deleted": False},
            )
        return row

    def create_info(
        self,
        content: str,
        source: str = "",
        keyword_ids: list[str] | None = None,
        auto_link: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> Info:
        """Store an info; link it to ``keyword_ids`` (PRIMARY) and, with ``auto_link``, to
        every keyword whose name/alias occurs in the content (relations from the agent's
        ``link_info``; RELATED for every exact hit when the agent fails)."""
        content = self._clean_content(content)
        if not isinstance(source, str):
            raise InvalidInputError("source must be a string")
        meta = self._clean_metadata(metadata)
        with self._lock:
            self._check_open()
            self._sync(force=True)
            ids = self._keyword_ids(keyword_ids)
            ios: list[dict[str, Any]] = []
            auto: dict[str, RelationType] = {}
            if auto_link:
                auto, ios = self._auto_links(content)
            with self._writing():
                txn = Txn(self.state)
                links: dict[str, tuple[RelationType, str]] = {
                    kw: (rel, "auto_link") for kw, rel in auto.items() if kw in self.state.nodes
                }
                for kw in ids:
                    if kw not in self.state.nodes:
                        raise NotFoundError(f"keyword {kw!r} not found", id=kw)
                    links[kw] = (RelationType.PRIMARY, "user")
                row = self._stage_info(txn, content, source, meta, links)
                self._commit(txn, "create_info", f"create info ({len(links)} link(s))", agent_io=self._public_io(ios) or None)
                return self.state.infos[row["id"]]

    def update_info(self, info_id: str, patch: dict[str, Any], version: int | None = None) -> WriteResult:
        """Patch ``content``/``source``/``metadata`` (optimistic ``version`` when given)."""
        if not isinstance(patch, dict) or not patch:
            raise InvalidInputError("patch must be a non-empty dict")
        unknown = set(patch) - INFO_PATCH_KEYS
        if unknown:
            raise InvalidInputError(f"cannot patch {sorted(unknown)}; allowed: {sorted(INFO_PATCH_KEYS)}")
        with self._writing():
            txn = Txn(self.state)
            row = txn.get("info", info_id) if isinstance(info_id, str) else None
            if row is None:
                raise NotFoundError(f"info {info_id!r} not found", id=str(info_id))
            if version is not None and int(row["version"]) != int(version):
                raise VersionConflictError(
                    f"info {info_id!r} is at version {row['version']}, not {version}",
                    id=info_id, expected=int(version), actual=int(row["version"]),
                )
            new = dict(row)
            if "content" in patch:
                new["content"] = self._clean_content(patch["content"])
            if "source" in patch:
                if not isinstance(patch["source"], str):
                    raise InvalidInputError("source must be a string")
                new["source"] = patch["source"]
            if "metadata" in patch:
                new["metadata"] = self._clean_metadata(patch["metadata"])
            staged = txn.put("info", new)
            op = self._commit(txn, "update_info", f"update info {info_id} ({', '.join(sorted(patch))})")
            return WriteResult(op, staged["version"], [info_id])

    def delete_info(self, info_id: str) -> WriteResult:
        """Soft-delete an info and its links."""
        with self._writing():
            txn = Txn(self.state)
            if txn.get("info", info_id) is None:
                raise NotFoundError(f"info {info_id!r} not found", id=str(info_id))
            for link in txn.links_of_info(info_id):
                txn.delete("link", f"{info_id}|{link['keyword_id']}")
            txn.delete("info", info_id)
            op = self._commit(txn, "delete_info", f"delete info {info_id}")
            return WriteResult(op, None, [info_id])

    def link_info(
        self,
        info_id: str,
        keyword_id: str,
        relation: RelationType | str = RelationType.PRIMARY,
        created_by: str = "user",
    ) -> WriteResult:
        """Link (or re-link with another relation) an info to a keyword."""
        rel = RelationType.parse(relation)
        if not isinstance(created_by, str) or not created_by:
            raise InvalidInputError("created_by must be a non-empty string")
        with self._writing():
            self._info_or_raise(info_id)
            self._node_or_raise(keyword_id)
            txn = Txn(self.state)
            existing = txn.get("link", f"{info_id}|{keyword_id}")
            row = {
                "info_id": info_id,
                "keyword_id": keyword_id,
                "relation": rel.value,
                "created_by": created_by,
                "created_at": existing["created_at"] if existing else txn.now,
                "deleted": False,
            }
            staged = txn.put("link", row)
            op = self._commit(txn, "link_info", f"link info {info_id} to '{self.state.nodes[keyword_id].name}' as {rel.value}")
            return WriteResult(op, staged["version"], [info_id, keyword_id])

    def unlink_info(self, info_id: str, keyword_id: str) -> WriteResult:
        with self._writing():
            txn = Txn(self.state)
            if txn.get("link", f"{info_id}|{keyword_id}") is None:
                raise NotFoundError(f"info {info_id!r} is not linked to {keyword_id!r}", id=str(info_id))
            txn.delete("link", f"{info_id}|{keyword_id}")
            op = self._commit(txn, "unlink_info", f"unlink info {info_id} from {keyword_id}")
            return WriteResult(op, None, [info_id, keyword_id])

    def batch_create_infos(self, specs: list[dict[str, Any]], *, use_agent: bool = False) -> list[Info]:
        """Create many infos as one operation (one fsync), all or nothing.

        Each spec: ``content`` (required), ``source``, ``metadata``, ``keyword_ids`` (linked
        with ``relation``, default PRIMARY), ``auto_link`` (exact hits linked RELATED; the
        agent decides relations only when ``use_agent=True``), optional ``id``.
        """
        if not isinstance(specs, list):
            raise InvalidInputError("specs must be a list of dicts")
        with self._lock:
            self._check_open()
            self._sync(force=True)
            prepared = []
            ios: list[dict[str, Any]] = []
            for i, spec in enumerate(specs):
                try:
                    if not isinstance(spec, dict):
                        raise InvalidInputError("spec is not a dict")
                    content = self._clean_content(spec.get("content"))
                    source = spec.get("source") or ""
                    if not isinstance(source, str):
                        raise InvalidInputError("source must be a string")
                    meta = self._clean_metadata(spec.get("metadata"))
                    ids = self._keyword_ids(spec.get("keyword_ids"))
                    rel = RelationType.parse(spec.get("relation"), RelationType.PRIMARY)
                    info_id = spec.get("id")
                    if info_id is not None and (not isinstance(info_id, str) or not info_id or "|" in info_id):
                        raise InvalidInputError("id must be a non-empty string without '|'")
                except (InvalidInputError, NotFoundError) as exc:
                    raise type(exc)(f"spec {i}: {exc.message}", **{**exc.context, "index": i}) from exc
                links: dict[str, tuple[RelationType, str]] = {}
                if spec.get("auto_link"):
                    auto, more = self._auto_links(content, use_agent)
                    ios.extend(more)
                    links.update({kw: (r, "auto_link") for kw, r in auto.items()})
                links.update({kw: (rel, "user") for kw in ids})
                prepared.append((content, source, meta, links, info_id))
            with self._writing():
                txn = Txn(self.state)
                out: list[str] = []
                for i, (content, source, meta, links, info_id) in enumerate(prepared):
                    if info_id is not None and (info_id in self.state.infos or info_id in txn.staged["info"]):
                        raise InvalidInputError(f"spec {i}: id {info_id!r} already exists", index=i)
                    for kw in links:
                        if kw not in self.state.nodes:
                            raise NotFoundError(f"spec {i}: keyword {kw!r} not found", id=kw, index=i)
                    out.append(self._stage_info(txn, content, source, meta, links, info_id)["id"])
                if not out:
                    return []
                self._commit(txn, "batch_create_infos", f"create {len(out)} info(s)", agent_io=self._public_io(ios) or None)
                return [self.state.infos[i] for i in out]


__all__ = ["CREATED_BY", "InfoWritesMixin"]

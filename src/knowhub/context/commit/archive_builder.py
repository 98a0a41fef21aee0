"""ArchiveBuilder: the session archive snapshot and node (seed 004 §6.2 step 1, §10.4).

The archive node ``ctx://{account}/users/{user}/sessions/{session_id}`` keeps the whole
transcript in ``content.md`` — one block per message with its id, speaker, role and
timestamp — so a session can always be read back. L0 is the summary's first sentences,
L1 the summary plus statistics. Committing more messages of the same session appends the
new ones (by message id) to the transcript.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from knowhub.context.core.enums import ContextType, WriteAction
from knowhub.context.core.objects import ContextNode, SessionArchive, WriteResult
from knowhub.context.core.uri import CtxLike, check_access, session_uri
from knowhub.context.extraction.messages import normalize_messages
from knowhub.context.fs.context_fs import ContextFS
from knowhub.errors import KnowhubError
from knowhub.providers.llm import LLMClient, build_task_messages
from knowhub.providers.llm.local_context_rules import summarize_session
from knowhub.providers.llm.local_context_text import truncate

__all__ = ["SUMMARY_SCHEMA", "ArchiveBuilder", "normalize_used_tools"]

log = logging.getLogger(__name__)

SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "description": "3-6 sentences: who, what, when, decisions"},
        "reason": {"type": "string", "description": "what the summary kept and what it left out"},
    },
    "required": ["summary", "reason"],
}
_SUMMARY_INSTRUCTIONS = (
    "Summarize this conversation in 3-6 sentences for a long-term memory archive. Keep names, "
    "dates (absolute, resolved from message timestamps), places, decisions and open tasks. Write "
    "in the language of the conversation. In `reason`, say in one short sentence what you kept "
    "and what you left out."
)
#: The longest model reason kept in the archive's stats.
REASON_CHARS = 500


def normalize_used_tools(used_tools: Sequence[Any] | None) -> list[dict[str, Any]]:
    """``[{name, kind, success, description, source_refs}]`` from names or dicts."""
    out: list[dict[str, Any]] = []
    for item in used_tools or []:
        if isinstance(item, str) and item.strip():
            out.append({"name": item.strip()})
        elif isinstance(item, dict) and (item.get("name") or item.get("tool_name")):
            entry = {"name": str(item.get("name") or item.get("tool_name"))}
            for key in ("kind", "success", "description", "source_refs", "usage_key", "detail"):
                if item.get(key) is not None:
                    entry[key] = item[key]
            out.append(entry)
    return out


def _used_context_uris(ctx: CtxLike, used_contexts: Sequence[Any] | None) -> list[str]:
    uris: list[str] = []
    for item in used_contexts or []:
        uri = item.get("uri") if isinstance(item, dict) else item
        if not isinstance(uri, str):
            continue
        try:
            uris.append(check_access(ctx, uri).uri)
        except KnowhubError:
            log.warning("ignoring used context %r: not addressable by this request", uri[:200])
    return list(dict.fromkeys(uris))


class ArchiveBuilder:
    """Builds :class:`SessionArchive` objects and writes archive nodes.

    Args:
        fs: the primary store.
        llm: model for the summary (task ``summarize_session``); None: extractive summary.
        recent: how many trailing messages the archive object keeps in ``recent_messages``.
    """

    def __init__(self, fs: ContextFS, llm: LLMClient | None = None, *, recent: int = 10) -> None:
        self.fs = fs
        self.llm = llm
        self.recent = recent

    def build_archive(
        self,
        ctx: CtxLike,
        messages: Sequence[dict[str, Any]],
        used_contexts: Sequence[Any] | None = None,
        used_tools: Sequence[Any] | None = None,
        *,
        session_id: str | None = None,
        session_time: str | None = None,
    ) -> SessionArchive:
        """Summary, recent messages and statistics of one batch (nothing is written)."""
        sid = session_id or getattr(ctx, "session_id", None) or "session"
        normalized = normalize_messages(messages, sid)
        times = [str(m["timestamp"]) for m in normalized if m.get("timestamp") not in (None, "")]
        when = session_time or (times[0] if times else None)
        roles = Counter(m["role"] for m in normalized)
        speakers = list(dict.fromkeys(m["name"] or m["role"] for m in normalized))
        stats: dict[str, Any] = {
            "message_count": len(normalized),
            "roles": dict(roles),
            "speakers": speakers,
            "session_time": when,
            "first_timestamp": times[0] if times else None,
            "last_timestamp": times[-1] if times else None,
            "chars": sum(len(m["content"]) for m in normalized),
            "message_ids": [m["id"] for m in normalized],
            "used_tools": normalize_used_tools(used_tools),
            "used_contexts": _used_context_uris(ctx, used_contexts),
        }
        summary, stats["summary_reason"] = self._summary(sid, when, normalized)
        return SessionArchive(
            session_id=sid,
            archive_uri=session_uri(ctx, sid),
            summary=summary,
            recent_messages=normalized[-self.recent:] if self.recent > 0 else [],
            stats=stats,
        )

    def _summary(self, session_id: str, when: str | None, messages: list[dict[str, Any]]) -> tuple[str, str]:
        """``(summary, reason)``: the model's summary and its reason, or the extractive
        summary with a reason that says why (kept in the archive's ``stats.summary_reason``)."""
        payload = {
            "session_id": session_id,
            "session_time": when,
            "messages": [
                {k: (truncate(m[k], 600) if k == "content" else m[k]) for k in ("id", "role", "name", "content", "timestamp") if m.get(k) not in (None, "")}
                for m in messages[-300:]
            ],
        }
        why = "extractive summary (no LLM configured)"
        if self.llm is not None:
            try:
                answer = self.llm.chat(build_task_messages("summarize_session", _SUMMARY_INSTRUCTIONS, payload, SUMMARY_SCHEMA), SUMMARY_SCHEMA)
                summary = answer.get("summary") if isinstance(answer, dict) else None
                if isinstance(summary, str) and summary.strip():
                    reason = answer.get("reason")
                    if isinstance(reason, str) and reason.strip():
                        return summary.strip(), reason.strip()[:REASON_CHARS]
                    return summary.strip(), "summary of the configured LLM (no reason given)"
                log.warning("summarize_session: answer without a summary; using the extractive summary")
                why = "extractive summary: the model's answer had no summary"
            except KnowhubError as exc:
                log.warning("summarize_session failed (%s); using the extractive summary", exc)
                why = f"extractive summary: summarize_session failed ({exc.code})"
        return summarize_session(payload), why

    @staticmethod
    def transcript_block(message: dict[str, Any]) -> str:
        """One message of the transcript: header line with id, speaker, role, time; then text."""
        speaker = message.get("name") or message.get("role")
        when = f" · {message['timestamp']}" if message.get("timestamp") not in (None, "") else ""
        caption = f"\n[shared image: {message['caption']}]" if message.get("caption") else ""
        return f"### [{message['id']}] {speaker} ({message['role']}){when}\n{message['content']}{caption}\n"

    def write_archive(self, ctx: CtxLike, archive: SessionArchive, messages: Sequence[dict[str, Any]]) -> WriteResult:
        """Create the archive node, or append the messages it does not hold yet."""
        normalized = normalize_messages(messages, archive.session_id)
        uri = archive.archive_uri
        with self.fs.locked(ctx):
            existing = self.fs.read_node(ctx, uri) if self.fs.exists(ctx, uri) else None
            known = set(existing.metadata.get("message_ids") or []) if existing is not None else set()
            new = [m for m in normalized if m["id"] not in known]
            if existing is not None and not new:
                return WriteResult(uri, WriteAction.SKIP.value, existing.version, False, False, "archive already holds these messages")
            blocks = "\n".join(self.transcript_block(m) for m in new)
            ids = [*(existing.metadata.get("message_ids") or [] if existing else []), *(m["id"] for m in new)]
            summaries = [*(existing.metadata.get("summaries") or [] if existing else []), archive.summary]
            stats = {k: v for k, v in archive.stats.items() if k != "message_ids"}
            metadata = {
                **(existing.metadata if existing else {}),
                "session_id": archive.session_id,
                "message_ids": ids,
                "source_refs": ids,
                "session_ids": [archive.session_id],
                "summaries": summaries[-20:],
                "stats": stats,
                "speakers": list(dict.fromkeys([*(existing.metadata.get("speakers") or [] if existing else []), *stats.get("speakers", [])])),
                "session_time": (existing.metadata.get("session_time") if existing else None) or stats.get("session_time"),
            }
            summary_text = " ".join(summaries[-3:])
            header = f"# Session {archive.session_id}\n\nsession time: {metadata['session_time'] or 'unknown'}\n\n"
            content = f"{existing.content.rstrip()}\n\n{blocks}" if existing else header + blocks
            speakers = ", ".join(metadata["speakers"])
            node = ContextNode(
                uri=uri,
                context_type=ContextType.SESSION.value,
                category="session",
                abstract=truncate(f"Session {archive.session_id} ({metadata['session_time'] or 'unknown time'}; {speakers}): {archive.summary}", 240),
                overview=f"{summary_text}\n\n- messages: {len(ids)}\n- speakers: {speakers}\n- session time: {metadata['session_time'] or 'unknown'}",
                content=content,
                metadata=metadata,
            )
            version = self.fs.write_node(ctx, node)
        action = WriteAction.CREATE if existing is None else WriteAction.APPEND
        return WriteResult(uri, action.value, version, existing is None, existing is not None, "session archived")

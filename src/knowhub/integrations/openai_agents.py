"""OpenAI Agents SDK adapter: :class:`KnowhubSession` and :func:`knowhub_tools`.

``KnowhubSession`` is the SDK's ``Session`` (``session_id``, ``session_settings``, async
``get_items``, ``add_items``, ``pop_item``, ``clear_session``) on knowhub's context engine:

* **Items are kept exactly**, per user and session, durably, in the engine's session item
  log (:mod:`knowhub.context.session_items`): messages, function calls and their outputs,
  reasoning items, whatever the SDK hands over, key for key. ``get_items``/``pop_item``/
  ``clear_session`` behave as the SDK's ``SQLiteSession`` (tested against it).
* **The conversation becomes memory.** When ``add_items`` stores a batch holding an
  assistant message (a model turn that answered) and at least ``commit_every`` such answers
  are not committed yet, the items not committed so far are turned into chat messages and
  passed to ``commit_session`` (the archive ``users/{user}/sessions/{key}`` and memory
  extraction), then the log's ``committed`` cursor moves past them. The cursor lives in
  the log, so every item is committed once, across processes and restarts; a commit sent
  twice is answered ``duplicate`` by the engine. A failing commit never fails the agent:
  it is logged, the items stay pending, and the next answer (or :meth:`KnowhubSession.commit`)
  retries them. ``commit_every=0`` turns automatic commits off. Reasoning items are not
  committed (they are the model's scratch work), nor are the calls of knowhub's own tools
  (their outputs are memories already).

``knowhub_tools(knowhub)`` gives ``FunctionTool``\\ s for an ``Agent``: ``search_memory``,
``read_memory``, ``remember``, ``search_knowledge`` and ``save_knowledge``.

"A knowhub" is a :class:`~knowhub.client.KnowhubClient`, an
:class:`~knowhub.client.AsyncKnowhubClient` or a :class:`~knowhub.client.LocalKnowhub`;
synchronous ones are called in a worker thread so the event loop never blocks. The user is
the knowhub's principal; ``user_id=`` acts for an end user (``knowhub.with_user``).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

try:
    from agents import FunctionTool, function_tool
    from agents.memory import SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(
        "knowhub.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'knowhub[openai-agents]'"
    ) from exc

from knowhub.errors import InvalidInputError, KnowhubError

__all__ = ["COMMIT_CHUNK", "MEMORY_TOOL_NAMES", "KnowhubSession", "items_to_messages", "knowhub_tools"]

log = logging.getLogger(__name__)

#: Names of the tools :func:`knowhub_tools` makes (their calls are not committed as memory).
MEMORY_TOOL_NAMES: tuple[str, ...] = ("search_memory", "read_memory", "remember", "search_knowledge", "save_knowledge")
#: Items per ``commit_session`` call (the HTTP API takes at most 1000 messages).
COMMIT_CHUNK = 500
_MAX_TEXT = 100_000
_MAX_TOOL_TEXT = 4_000
_CHAT_ROLES = ("user", "assistant")


async def _call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a knowhub method: async ones awaited, sync ones in a worker thread."""
    if inspect.iscoroutinefunction(method):
        return await method(*args, **kwargs)
    result = await asyncio.to_thread(method, *args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


def _text(content: Any) -> str:
    """The text of a message content: a string, or the ``text`` of its parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part["text"]) for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))
    return json.dumps(content, ensure_ascii=False)


def _is_answer(item: Any) -> bool:
    """True for an assistant message item (a model turn that answered)."""
    return isinstance(item, dict) and item.get("role") == "assistant" and item.get("type", "message") == "message"


def _message_id(position: int, item: dict[str, Any]) -> str:
    # position keeps ids unique in the session; the digest tells a popped-and-replaced item apart
    digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:8]
    return f"{position}-{digest}"


def items_to_messages(
    items: Sequence[dict[str, Any]], offset: int = 0, *, skip_tools: Sequence[str] = MEMORY_TOOL_NAMES
) -> tuple[list[dict[str, Any]], list[str]]:
    """SDK items → (chat messages for ``commit_session``, names of the tools used).

    User and assistant messages keep their text; a function call becomes an assistant
    message with ``tool_calls`` and its output a ``tool`` message (truncated to 4000
    characters); reasoning and other items are left out, and so are the calls of
    ``skip_tools`` with their outputs. ``offset`` is the position of ``items[0]`` in the
    session: message ids are ``{position}-{digest}``, unique within the session.
    """
    messages: list[dict[str, Any]] = []
    used: list[str] = []
    skipped: set[str] = set()
    for position, item in enumerate(items, offset):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        mid = _message_id(position, item)
        if kind == "message" and item.get("role") in _CHAT_ROLES:
            text = _text(item.get("content"))
            if text.strip():
                messages.append({"role": item["role"], "content": text[:_MAX_TEXT], "id": mid})
        elif kind == "function_call":
            name, call_id = str(item.get("name") or "tool"), str(item.get("call_id") or mid)
            if name in skip_tools:
                skipped.add(call_id)
                continue
            used.append(name)
            call = {"id": call_id, "type": "function",
                    "function": {"name": name, "arguments": str(item.get("arguments") or "")[:_MAX_TOOL_TEXT]}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call], "id": mid})
        elif kind == "function_call_output":
            call_id = str(item.get("call_id") or "")
            if call_id in skipped:
                continue
            messages.append({"role": "tool", "tool_call_id": call_id, "content": _text(item.get("output"))[:_MAX_TOOL_TEXT],
                             "id": mid})
    return messages, list(dict.fromkeys(used))


def _field(obj: Any, name: str, default: Any = None) -> Any:
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


class KnowhubSession:
    """The SDK's ``Session`` on knowhub (see the module doc).

    Args:
        session_id: any non-empty string (up to 1000 characters).
        knowhub: a KnowhubClient, AsyncKnowhubClient or LocalKnowhub; its principal is the user.
        user_id: act for this end user instead (``knowhub.with_user(user_id)``; over HTTP the
            key needs the ``act_for`` right).
        commit_every: commit the pending items into memory once this many answers are
            pending (1: after every answered turn); 0: only when :meth:`commit` is called.
        session_settings: the SDK's ``SessionSettings`` (``limit``: default for get_items).

    Attributes:
        last_commits: the ``CommitResult``\\ s of the latest commit.
        commit_failures: automatic commits that failed (logged; retried on the next answer).
    """

    def __init__(
        self,
        session_id: str,
        knowhub: Any,
        *,
        user_id: str | None = None,
        commit_every: int = 1,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("session_id must be a non-empty string", field="session_id")
        if isinstance(commit_every, bool) or not isinstance(commit_every, int) or commit_every < 0:
            raise InvalidInputError("commit_every must be a whole number >= 0", field="commit_every")
        self.session_id = session_id
        self.knowhub = knowhub.with_user(user_id) if user_id is not None else knowhub
        self.commit_every = commit_every
        self.session_settings: SessionSettings | None = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )
        self.last_commits: list[Any] = []
        self.commit_failures = 0
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    @property
    def _ctx(self) -> Any:
        return self.knowhub.context

    def _guard(self) -> asyncio.Lock:
        """One lock per event loop (``Runner.run_sync`` runs each call in a new loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    # ------------------------------------------------------------------ Session protocol

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest ``limit`` items (default ``session_settings.limit``; None: all), oldest first."""
        resolved = resolve_session_limit(limit, self.session_settings)
        if resolved is not None and resolved < 0:  # as SQLiteSession: a negative limit is no limit
            resolved = None
        page = await _call(self._ctx.get_session_items, self.session_id, resolved)
        return list(_field(page, "items", []))

    async def add_items(self, items: list[Any]) -> None:
        """Store ``items`` exactly (one durable batch); commit into memory as the module doc says."""
        if not items:
            return
        # the JSON the SDK's items are, as SQLiteSession stores them (a clear error if not JSON)
        batch = json.loads(json.dumps(list(items), allow_nan=False))
        async with self._guard():
            state = await _call(self._ctx.add_session_items, self.session_id, batch)
            if self.commit_every and any(_is_answer(item) for item in batch):
                await self._auto_commit(int(_field(state, "committed", 0)))

    async def pop_item(self) -> Any | None:
        """Remove and return the most recent item (None when the session is empty)."""
        async with self._guard():
            return await _call(self._ctx.pop_session_item, self.session_id)

    async def clear_session(self) -> None:
        """Drop every item of the session (memories already committed stay)."""
        async with self._guard():
            await _call(self._ctx.clear_session_items, self.session_id)

    # ------------------------------------------------------------------ memory

    async def commit(self) -> list[Any]:
        """Commit every pending item into memory now; the CommitResults (errors raise)."""
        async with self._guard():
            state = await _call(self._ctx.get_session_items, self.session_id, 0)
            return await self._commit_from(int(_field(state, "committed", 0)))

    async def _auto_commit(self, committed: int) -> None:
        try:
            page = await _call(self._ctx.get_session_items, self.session_id, None, committed)
            answers = sum(1 for item in _field(page, "items", []) if _is_answer(item))
            if answers >= self.commit_every:
                await self._commit_page(page)
        except (KnowhubError, OSError) as exc:  # fail open: the items are kept, the commit is retried
            self.commit_failures += 1
            log.warning("knowhub: committing session %r into memory failed (%s); will retry", self.session_id, exc)

    async def _commit_from(self, committed: int) -> list[Any]:
        page = await _call(self._ctx.get_session_items, self.session_id, None, committed)
        return await self._commit_page(page)

    async def _commit_page(self, page: Any) -> list[Any]:
        items = list(_field(page, "items", []))
        offset = int(_field(page, "offset", 0))
        key = str(_field(page, "key", "")) or None
        results: list[Any] = []
        for start in range(0, len(items), COMMIT_CHUNK):
            chunk = items[start:start + COMMIT_CHUNK]
            messages, tools = items_to_messages(chunk, offset + start)
            if messages:
                results.append(await _call(self._ctx.commit_session, messages, None, tools or None,
                                           {"session_id": key} if key else None))
            await _call(self._ctx.mark_session_committed, self.session_id, offset + start + len(chunk))
        if results:
            self.last_commits = results
        return results

    def __repr__(self) -> str:
        return f"KnowhubSession({self.session_id!r}, commit_every={self.commit_every})"


# ---------------------------------------------------------------------- tools

KnowledgeType = Literal["user_profile", "strategy", "tool", "usecase", "definition", "plan"]


def _error(exc: KnowhubError) -> str:
    code = getattr(exc, "code", None) or type(exc).__name__
    return f"knowhub error ({code}): {exc}"


def _format_blocks(result: Any) -> str:
    blocks = list(_field(result, "blocks", []) or [])
    if not blocks:
        return "No memory matches this query."
    lines = []
    for i, block in enumerate(blocks, 1):
        category = _field(block, "category") or "memory"
        text = (_field(block, "abstract") or _field(block, "overview") or "").strip()
        lines.append(f"{i}. [{category}] {text} (uri: {_field(block, 'uri')})")
    return "\n".join(lines)


def _format_hits(hits: Any) -> str:
    rows = list(hits or [])
    if not rows:
        return "No knowledge matches this query."
    lines = []
    for i, hit in enumerate(rows, 1):
        item = _field(hit, "knowledge", hit)
        content = str(_field(item, "content", ""))
        if len(content) > 600:
            content = content[:600] + "…"
        types = ", ".join(_field(item, "types", []) or [])
        lines.append(f"{i}. {_field(item, 'task')}: {content} (id: {_field(item, 'id')}; types: {types})")
    return "\n".join(lines)


def knowhub_tools(
    knowhub: Any,
    *,
    user_id: str | None = None,
    include: Sequence[str] | None = None,
    top_k: int = 5,
) -> list[FunctionTool]:
    """Memory and knowledge tools for an ``Agent`` (``Agent(tools=knowhub_tools(kh))``).

    Args:
        knowhub: a KnowhubClient, AsyncKnowhubClient or LocalKnowhub (its principal is the user).
        user_id: act for this end user (``knowhub.with_user``).
        include: names out of :data:`MEMORY_TOOL_NAMES` (default: all five).
        top_k: the largest number of results a search tool returns.

    A tool never raises into the agent loop: a knowhub error comes back as its text.
    """
    kh = knowhub.with_user(user_id) if user_id is not None else knowhub
    wanted = list(include) if include is not None else list(MEMORY_TOOL_NAMES)
    unknown = sorted(set(wanted) - set(MEMORY_TOOL_NAMES))
    if unknown:
        raise InvalidInputError(f"unknown knowhub tools: {', '.join(unknown)}", field="include")
    cap = max(1, min(int(top_k), 20))

    async def search_memory(query: str, limit: int = 5) -> str:
        """Search this user's long-term memory: facts, preferences and events from earlier
        conversations with this user, and this agent's own past experience. Call it before
        answering anything that may depend on what the user said in another session (their
        name, where they live, what they like, what was decided). Each line is one memory with
        its uri; read_memory(uri) gives the whole of it.

        Args:
            query: what to look for, in the user's words (any language).
            limit: how many memories to return (1-20).
        """
        try:
            result = await _call(kh.context.search_memory, query, None, None, max(1, min(limit, cap)))
        except KnowhubError as exc:
            return _error(exc)
        return _format_blocks(result)

    async def read_memory(uri: str, level: Literal["L1", "L2"] = "L1") -> str:
        """Read one memory found by search_memory in full.

        Args:
            uri: the ctx:// uri search_memory printed.
            level: L1 for an overview, L2 for the complete text.
        """
        try:
            block = await _call(kh.context.read_memory, uri, level)
        except KnowhubError as exc:
            return _error(exc)
        text = _field(block, "content_excerpt") if level == "L2" else _field(block, "overview")
        return str(text or _field(block, "abstract") or "(empty)")

    async def remember(fact: str) -> str:
        """Store something worth remembering about the user or the task in long-term memory
        right away, in one self-contained sentence (the conversation itself is also committed
        to memory automatically; use this for what must not be lost).

        Args:
            fact: the fact, preference or decision, e.g. "The user is allergic to peanuts."
        """
        try:
            result = await _call(kh.context.commit_session, [{"role": "user", "content": fact}])
        except KnowhubError as exc:
            return _error(exc)
        written = [r for r in _field(result, "write_results", []) or [] if _field(r, "uri")]
        return f"Remembered ({len(written)} memory node(s) written)." if written else "Remembered."

    async def search_knowledge(query: str, limit: int = 5) -> str:
        """Search the shared knowledge base: strategies, tool usage notes, definitions, plans
        and use cases saved by agents and people (only what this user may see). Call it when
        a task may have been solved before or needs team or domain know-how.

        Args:
            query: the task or question, in natural language (any language).
            limit: how many items to return (1-20).
        """
        try:
            hits = await _call(kh.knowledge.search, query, max(1, min(limit, cap)))
        except KnowhubError as exc:
            return _error(exc)
        return _format_hits(hits)

    async def save_knowledge(task: str, content: str, types: list[KnowledgeType]) -> str:
        """Save a reusable piece of knowledge learnt while working: what worked, how a tool
        is used, a definition, a plan. Saved private to this user (visible to them only).

        Args:
            task: the situation it applies to, as a short sentence ("deploying the web app").
            content: the knowledge itself, self-contained and concrete.
            types: one or more of user_profile, strategy, tool, usecase, definition, plan.
        """
        try:
            item = await _call(kh.knowledge.save, {"task": task, "content": content, "types": list(types) or ["strategy"]})
        except KnowhubError as exc:
            return _error(exc)
        return f"Saved as knowledge {_field(item, 'id')}."

    makers: dict[str, Callable[..., Any]] = {"search_memory": search_memory, "read_memory": read_memory, "remember": remember,
              "search_knowledge": search_knowledge, "save_knowledge": save_knowledge}
    return [function_tool(makers[name], name_override=name) for name in wanted]

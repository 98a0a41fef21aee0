"""LangGraph's long-term memory store on knowhub: :class:`KnowhubStore`.

``graph.compile(store=KnowhubStore(knowhub))`` gives every node's ``store`` (and
``get_store()``) knowhub's knowledge engine as the place where memories live.

How LangGraph's model maps onto knowhub (docs/integrations.md has the user's view):

- **Who.** The store is bound to one principal: the one of the ``knowhub`` it is given (a
  :class:`~knowhub.client.LocalKnowhub` principal, a :class:`~knowhub.client.KnowhubClient`
  key, or ``client.with_user(user_id)`` for a key that acts for end users). Every item is
  owned by that principal; another principal's store never sees it, even under the same
  namespace and key.
- **What.** An item is a *keyed* knowledge item (:mod:`knowhub.knowledge.keyed`): its
  ``namespace`` and ``key`` are LangGraph's, so a put replaces the item stored there (a new
  version: history and undo work) and get, list and namespace listing are exact lookups.
  ``content`` holds the value as JSON (read back exactly); ``task`` holds the value's text
  (the ``index`` fields, else every string in it), which is what search ranks on. Scopes
  default to the principal's private scope; types to ``usecase``.
- **Search.** ``filter`` is exact, with the operators of LangGraph's ``InMemoryStore``
  (equality, nested objects, lists, ``$eq $ne $gt $gte $lt $lte``). Without a ``query``
  items come newest change first. With one, the knowledge engine ranks the items under the
  prefix (its lexical + vector relevance; ``SearchItem.score`` is that relevance, 1.0 for
  the best); as in LangGraph's stores a query orders and never drops: matching items the
  engine does not find relevant follow, newest first, with ``score=None``.

Exactness costs: a search with a ``filter`` or ``query`` and a namespace listing read every
item (or namespace) under the prefix, 1,000 per call. That suits a memory store of one user
(thousands of items); a corpus of millions belongs in the knowledge engine's own search.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import math
from collections.abc import Callable, Coroutine, Iterable, Sequence
from datetime import datetime
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        tokenize_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "knowhub.integrations.langgraph needs LangGraph: pip install 'knowhub[langgraph]'"
    ) from exc

from knowhub.errors import InvalidInputError, NotFoundError

__all__ = ["KnowhubStore"]

#: Items per ``list_keyed`` call (the engine's maximum).
PAGE = 1_000
#: Most hits the engine ranks for one query (the engine's ``top_k`` maximum).
RANKED = 100
MAX_TASK_CHARS = 4_000
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


class KnowhubStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are the bound principal's keyed knowledge.

    Args:
        knowhub: a knowhub (``.knowledge`` namespace): ``LocalKnowhub``, ``KnowhubClient``
            or ``AsyncKnowhubClient`` (then use the async API: ``ainvoke``, ``aput`` ...).
        types: knowledge types of the items (``("user_profile",)`` makes them part of the
            user profile that ``knowhub.agent.on_start`` injects).
        scopes: scopes of the items (None: the principal's private scope). Items stay
            addressed by their owner only; wider scopes make them findable by the
            knowledge engine's search of the other members.
        fields: the value paths whose text is searched (LangGraph's ``index["fields"]``
            syntax: ``"text"``, ``"a.b"``, ``"chunks[*]"``); None: every string in the value.
    """

    supports_ttl = False

    def __init__(
        self,
        knowhub: Any,
        *,
        types: Sequence[str] = ("usecase",),
        scopes: Sequence[str] | None = None,
        fields: Sequence[str] | None = None,
    ) -> None:
        self.knowhub = knowhub
        self._kn = knowhub.knowledge
        self.types = list(types)
        self.scopes = None if scopes is None else list(scopes)
        self.fields = None if fields is None else list(fields)
        # an async knowhub (AsyncKnowhubClient) is an async context manager and not a sync one
        self._is_async = hasattr(knowhub, "__aenter__") and not hasattr(knowhub, "__enter__")

    # ------------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``; reads see the store as it was before the batch's writes."""
        if self._is_async:
            raise TypeError(
                "KnowhubStore over an async knowhub: use the async API (ainvoke, aput, asearch)"
            )
        return _drive(self._run(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch`, awaiting an async knowhub or off the event loop for a sync one."""
        ops = list(ops)
        if self._is_async:
            return await self._run(ops)
        return await asyncio.to_thread(self.batch, ops)

    # ------------------------------------------------------------------ the one implementation

    async def _run(self, ops: list[Op]) -> list[Result]:
        """Reads first, then the writes (the last put of a key wins), as InMemoryStore."""
        for op in ops:
            validate_op_namespace(op)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise InvalidInputError(f"unknown store operation {type(op).__name__}")
        for op in puts.values():
            await self._put(op)
        return results

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result = getattr(self._kn, method)(*args, **kwargs)
        if inspect.isawaitable(result):
            if not self._is_async:
                if inspect.iscoroutine(result):
                    result.close()
                raise TypeError(
                    "KnowhubStore: this knowhub is async; pass the store an async knowhub "
                    "object that is not also a sync context manager, and use ainvoke/aput"
                )
            result = await result
        return result

    async def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None  # nothing can be put there
        try:
            found = await self._call("get_by_key", list(op.namespace), op.key)
        except NotFoundError:
            return None
        return _item(found, Item)

    async def _put(self, op: PutOp) -> None:
        if op.value is None:
            # deleting what is not there is a no-op, as in every BaseStore
            with contextlib.suppress(NotFoundError):
                await self._call("delete_by_key", list(op.namespace), op.key)
            return
        await self._call("put", list(op.namespace), op.key, self._body(op))

    def _body(self, op: PutOp) -> dict[str, Any]:
        value = dict(op.value or {})
        try:
            content = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"store value of key {op.key!r} is not JSON: {exc}") from exc
        paths = self.fields if op.index is None else (op.index or [])
        text = _text_of(value, paths) if op.index is not False else ""
        label = "/".join(op.namespace) + f"/{op.key}"
        body: dict[str, Any] = {
            "task": (text or label)[:MAX_TASK_CHARS],
            "content": content,
            "types": self.types,
            "source": {"name": "langgraph", "category": "memory"},
        }
        if self.scopes is not None:
            body["scopes"] = self.scopes
        return body

    async def _items_under(self, prefix: tuple[str, ...]) -> list[Item]:
        """Every item under ``prefix``, newest change first."""
        out: list[Item] = []
        while True:
            page = await self._call("list_keyed", list(prefix), limit=PAGE, offset=len(out))
            out.extend(_item(k, Item) for k in page)
            if len(page) < PAGE:
                return out

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        _check_filter(op.filter)
        if not op.filter and not op.query and op.offset >= 0 and op.limit >= 0:
            # a plain page: the engine pages, nothing else is read
            page: list[SearchItem] = []
            while len(page) < op.limit:
                want = min(PAGE, op.limit - len(page))
                got = await self._call(
                    "list_keyed", list(prefix), limit=want, offset=op.offset + len(page)
                )
                page.extend(_item(k, SearchItem) for k in got)
                if len(got) < want:
                    break
            return page
        items = [i for i in await self._items_under(prefix) if _matches(i.value, op.filter)]
        scores: dict[tuple[tuple[str, ...], str], float] = {}
        if op.query:
            hits = await self._call(
                "search", op.query, top_k=RANKED, min_score=1, namespace_prefix=list(prefix)
            )
            for hit in hits:
                k = hit.knowledge
                scores.setdefault((tuple(k.namespace), k.key), float(hit.relevance))
            ranked = sorted(
                (i for i in items if (i.namespace, i.key) in scores),
                key=lambda i: -scores[(i.namespace, i.key)],
            )
            items = ranked + [i for i in items if (i.namespace, i.key) not in scores]
        return [
            SearchItem(i.namespace, i.key, i.value, i.created_at, i.updated_at,
                       scores.get((i.namespace, i.key)))
            for i in items[op.offset : op.offset + op.limit]
        ]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefix: list[str] = []
        for condition in conditions:  # the wildcard-free head of a prefix narrows the read
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    prefix.append(label)
                break
        found = [tuple(ns) for ns in await self._call("list_namespaces", prefix)]
        found = [ns for ns in found if all(_ns_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        else:
            found.sort()
        return found[op.offset : op.offset + op.limit]


# --------------------------------------------------------------------------- helpers


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (its calls are synchronous) to its result."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("KnowhubStore.batch: a knowhub call suspended; use abatch")


def _stamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _item(knowledge: Any, kind: Callable[..., Any]) -> Any:
    """A LangGraph Item (or SearchItem) of a keyed knowledge item."""
    value = json.loads(knowledge.content)
    fields = {
        "namespace": tuple(knowledge.namespace),
        "key": knowledge.key,
        "value": value,
        "created_at": _stamp(knowledge.created_at),
        "updated_at": _stamp(knowledge.updated_at),
    }
    return kind(**fields)


def _text_of(value: dict[str, Any], paths: Sequence[str] | None) -> str:
    """The searchable text of a value: the strings at ``paths``, else all of its strings."""
    if paths is None:
        strings: list[str] = []
        _strings(value, strings)
        return "\n".join(strings)
    texts: list[str] = []
    for path in paths:
        if path == "$":
            texts.append(json.dumps(value, ensure_ascii=False))
        else:
            texts.extend(get_text_at_path(value, tokenize_path(path)))
    return "\n".join(t for t in texts if t)


def _strings(node: Any, out: list[str]) -> None:
    if isinstance(node, str):
        if node.strip():
            out.append(node)
    elif isinstance(node, dict):
        for child in node.values():
            _strings(child, out)
    elif isinstance(node, list | tuple):
        for child in node:
            _strings(child, out)


def _ns_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's namespace match: label by label from the start (prefix) or the end
    (suffix), ``"*"`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace[: len(path)], path, strict=True)
    elif condition.match_type == "suffix":
        pairs = zip(namespace[len(namespace) - len(path) :], path, strict=True)
    else:
        raise InvalidInputError(f"unknown namespace match type {condition.match_type!r}")
    return all(want in ("*", have) for have, want in pairs)


def _check_filter(node: Any) -> None:
    """Refuse an unknown ``$`` operator before anything is read (not only when an item
    happens to reach it)."""
    if isinstance(node, dict):
        for name, child in node.items():
            if isinstance(name, str) and name.startswith("$") and name not in _OPERATORS:
                raise InvalidInputError(
                    f"unsupported filter operator {name!r}; use one of {', '.join(_OPERATORS)}"
                )
            _check_filter(child)
    elif isinstance(node, list | tuple):
        for child in node:
            _check_filter(child)


def _matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether a value passes a store filter (every field must)."""
    return all(_field_matches(value.get(name), want) for name, want in (filter or {}).items())


def _field_matches(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        operators = [k for k in want if isinstance(k, str) and k.startswith("$")]
        if operators:
            return all(_operator(have, op, arg) for op, arg in want.items())
        return isinstance(have, dict) and all(_field_matches(have.get(k), v) for k, v in want.items())
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(_field_matches(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def _operator(have: Any, operator: str, arg: Any) -> bool:
    if operator == "$eq":
        return bool(have == arg)
    if operator == "$ne":
        return bool(have != arg)
    left, right = _number(have), _number(arg)
    if left is None or right is None:
        return False  # a missing or non-numeric field is not greater or smaller than anything
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


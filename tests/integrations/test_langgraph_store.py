"""KnowhubStore against the real langgraph package: differential against InMemoryStore,
a compiled StateGraph using it, isolation between principals (in process and through a real
server with two keys), and the async path."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph", reason="pip install 'knowhub[langgraph]'")

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from knowhub.client import AsyncKnowhubClient, KnowhubClient, LocalKnowhub
from knowhub.config import Settings
from knowhub.errors import InvalidInputError
from knowhub.integrations.langgraph import KnowhubStore
from tests.client.conftest import _Server, write_plain_config
from tests.e2e.server_process import ALICE_KEY, BOB_KEY

CAROL_KEY = "lg-carol-key-0123456789"

NAMESPACES = [("a",), ("a", "b"), ("a", "c"), ("b",), ("a", "b", "c"), ("用户", "张三"), ("x/y",)]
PREFIXES = [(), ("a",), ("a", "b"), ("b",), ("用户",), ("x/y",), ("zzz",)]
KEYS = ["k1", "k2", "k3", "键", "", "a/b"]
WORDS = ["python", "tea", "coffee", "graph", "memory", "用户", "偏好", "rust"]
FILTERS: list[dict[str, Any] | None] = [
    None,
    {"tag": "x"},
    {"n": {"$gte": 2}},
    {"n": {"$ne": 3}, "tag": "y"},
    {"nested": {"z": 1}},
    {"n": {"$gt": 1, "$lt": 4}},
    {"list": ["p", "q"]},
    {"n": {"$eq": 0}},
    {"missing": None},
]
SUFFIXES = [None, ("b",), ("c",), ("*",), ("张三",)]
MATCH_PREFIXES = [None, ("a",), ("a", "*"), ("*", "b"), ("用户",)]


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalKnowhub]:
    settings = Settings.load(data_dir=tmp_path / "data")
    with LocalKnowhub(settings, principal="alice") as kh:
        yield kh


def _value(rng: random.Random) -> dict[str, Any]:
    return {
        "text": " ".join(rng.sample(WORDS, 3)),
        "n": rng.randint(0, 5),
        "tag": rng.choice(["x", "y"]),
        "nested": {"z": rng.randint(0, 2)},
        "list": rng.choice([["p", "q"], ["q"], []]),
        **({"missing": None} if rng.random() < 0.3 else {}),
    }


def _ident(item: Item) -> tuple[tuple[str, ...], str, str]:
    return (item.namespace, item.key, json.dumps(item.value, sort_keys=True, ensure_ascii=False))


def _drop_empty_namespaces(mem: InMemoryStore) -> None:
    """InMemoryStore lists a namespace a get or delete touched even when it holds nothing
    (its dict is a defaultdict); a database store (PostgresStore, ours) lists only the
    namespaces that hold items. The comparison uses the latter."""
    for ns in [ns for ns, items in mem._data.items() if not items]:
        del mem._data[ns]


def _random_op(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return PutOp(rng.choice(NAMESPACES), rng.choice(KEYS), _value(rng))
    if roll < 0.45:
        return PutOp(rng.choice(NAMESPACES), rng.choice(KEYS), None)
    if roll < 0.6:
        return GetOp(rng.choice([*NAMESPACES, ("nowhere",)]), rng.choice(KEYS))
    if roll < 0.82:
        query = " ".join(rng.sample(WORDS, 2)) if rng.random() < 0.4 else None
        return SearchOp(rng.choice(PREFIXES), rng.choice(FILTERS), rng.randint(1, 8),
                        rng.randint(0, 4), query)
    conditions = []
    prefix, suffix = rng.choice(MATCH_PREFIXES), rng.choice(SUFFIXES)
    if prefix:
        conditions.append(MatchCondition("prefix", prefix))
    if suffix:
        conditions.append(MatchCondition("suffix", suffix))
    return ListNamespacesOp(tuple(conditions), rng.choice([None, 1, 2]), rng.randint(1, 6),
                            rng.randint(0, 2))


def _full(op: SearchOp) -> SearchOp:
    return SearchOp(op.namespace_prefix, op.filter, 1_000, 0, op.query)


def _compare(op: Any, got: Any, want: Any, all_ours: Any, all_mem: Any) -> None:
    if isinstance(op, PutOp):
        assert got is None and want is None
    elif isinstance(op, GetOp):
        assert (got is None) == (want is None), op
        if got is not None:
            assert isinstance(got, Item) and _ident(got) == _ident(want)
            assert got.created_at <= got.updated_at
    elif isinstance(op, SearchOp):
        # the whole match set is the same; a page has the same size and is part of it
        assert sorted(map(_ident, all_ours)) == sorted(map(_ident, all_mem)), op
        assert len(got) == len(want), op
        assert {_ident(i) for i in got} <= {_ident(i) for i in all_ours}
        assert all(isinstance(i, SearchItem) for i in got)
        if not op.query:  # newest change first, paged consistently
            assert [_ident(i) for i in got] == [_ident(i) for i in all_ours][op.offset: op.offset + op.limit]
            assert all(i.score is None for i in got)
    else:
        assert got == want, op


def _run_differential(store: KnowhubStore, seed: int, steps: int, *, use_async: bool) -> int:
    rng = random.Random(seed)
    mem = InMemoryStore()
    compared = 0
    for _ in range(steps):
        ops = [_random_op(rng) for _ in range(1 if rng.random() < 0.8 else 3)]
        # InMemoryStore's reads see the state before the batch's puts; so do ours
        want: list[Any] = []
        full: list[Any] = []
        for op in ops:
            _drop_empty_namespaces(mem)
            want.append(None if isinstance(op, PutOp) else mem.batch([op])[0])
            searched = isinstance(op, SearchOp)
            full.append((store.batch([_full(op)])[0], mem.batch([_full(op)])[0]) if searched else (None, None))
        mem.batch([op for op in ops if isinstance(op, PutOp)])
        got = asyncio.run(store.abatch(ops)) if use_async else store.batch(ops)
        for op, g, w, (all_ours, all_mem) in zip(ops, got, want, full, strict=True):
            _compare(op, g, w, all_ours, all_mem)
            compared += 1
    # the end state is the same item for item
    everything = SearchOp((), None, 1_000, 0, None)
    assert sorted(map(_ident, store.batch([everything])[0])) == sorted(
        map(_ident, mem.batch([everything])[0])
    )
    _drop_empty_namespaces(mem)
    assert store.list_namespaces(limit=1_000) == mem.list_namespaces(limit=1_000)
    return compared


@pytest.mark.parametrize("seed", [1, 2])
def test_differential_against_in_memory_store(local: LocalKnowhub, seed: int) -> None:
    assert _run_differential(KnowhubStore(local), seed, 70, use_async=False) >= 70


def test_differential_async_path(local: LocalKnowhub) -> None:
    assert _run_differential(KnowhubStore(local), 3, 40, use_async=True) >= 40


def test_a_batch_reads_before_it_writes_and_the_last_put_wins(local: LocalKnowhub) -> None:
    store = KnowhubStore(local)
    ns = ("m",)
    got = store.batch([PutOp(ns, "k", {"v": 1}), GetOp(ns, "k"), PutOp(ns, "k", {"v": 2})])
    assert got == [None, None, None]
    assert store.get(ns, "k").value == {"v": 2}


def test_query_search_ranks_with_the_engine_and_never_drops(local: LocalKnowhub) -> None:
    store = KnowhubStore(local, fields=["text"])
    store.put(("docs",), "py", {"text": "Python packaging with pip and wheels", "lang": "en"})
    store.put(("docs",), "tea", {"text": "Green tea brewing temperatures", "lang": "en"})
    store.put(("docs",), "zh", {"text": "用户喜欢喝绿茶", "lang": "zh"})
    store.put(("other",), "py2", {"text": "Python packaging elsewhere", "lang": "en"})
    hits = store.search(("docs",), query="python packaging", limit=10)
    assert hits[0].key == "py" and hits[0].score == pytest.approx(1.0)
    assert sorted(h.key for h in hits) == ["py", "tea", "zh"]  # a query orders, never drops
    scored = [h.score is not None for h in hits]
    assert scored == sorted(scored, reverse=True)  # ranked hits first, the rest after
    assert next(h for h in hits if h.key == "tea").score is None
    zh = store.search(("docs",), query="绿茶", filter={"lang": "zh"})
    assert [(h.key, h.score is not None) for h in zh] == [("zh", True)]
    assert store.search(("docs",), query="python", limit=1, offset=1)[0].key != "py"


def test_values_round_trip_exactly_and_bad_input_is_clear(local: LocalKnowhub) -> None:
    store = KnowhubStore(local)
    value = {"s": "中文 text", "i": 3, "f": 2.5, "b": True, "none": None, "l": [1, "2", {"x": []}],
             "d": {"deep": {"deeper": "ok"}}}
    store.put(("用户", "张三"), "偏好", value)
    item = store.get(("用户", "张三"), "偏好")
    assert item is not None and item.value == value and item.namespace == ("用户", "张三")
    store.put(("nums",), "only-numbers", {"n": 1})  # no text: the address is the task
    assert store.get(("nums",), "only-numbers").value == {"n": 1}
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    with pytest.raises(InvalidInputError):
        store.put(("a",), "k", {"v": float("nan")})
    with pytest.raises(InvalidInputError):
        store.search(("a",), filter={"v": {"$regex": "x"}})
    assert store.get((), "k") is None
    with pytest.raises(NotImplementedError):
        store.put(("a",), "k", {"v": 1}, ttl=5)


def test_isolation_between_principals_in_process(local: LocalKnowhub) -> None:
    alice, bob = KnowhubStore(local), KnowhubStore(local.with_user("bob"))
    alice.put(("memories",), "food", {"text": "alice likes tea"})
    bob.put(("memories",), "food", {"text": "bob likes coffee"})
    bob.put(("bob-only",), "x", {"text": "secret of bob"})
    assert alice.get(("memories",), "food").value == {"text": "alice likes tea"}
    assert bob.get(("memories",), "food").value == {"text": "bob likes coffee"}
    assert alice.get(("bob-only",), "x") is None
    assert alice.list_namespaces() == [("memories",)]
    assert [i.value["text"] for i in alice.search((), query="secret of bob coffee")] == ["alice likes tea"]
    bob.delete(("memories",), "food")
    assert alice.get(("memories",), "food") is not None


class Memo(TypedDict, total=False):
    user: str
    message: str
    recalled: list[str]
    reply: str


def _graph(store: BaseStore) -> Any:
    """remember → recall → reply, each node using the injected ``store``."""

    def remember(state: Memo, *, store: BaseStore) -> Memo:
        if state["message"].startswith("remember "):
            fact = state["message"].removeprefix("remember ")
            store.put(("memories", state["user"]), str(abs(hash(fact))), {"text": fact})
        return {}

    def recall(state: Memo, *, store: BaseStore) -> Memo:
        found = store.search(("memories", state["user"]), query=state["message"], limit=3)
        return {"recalled": [i.value["text"] for i in found]}

    def reply(state: Memo) -> Memo:
        return {"reply": "I remember: " + "; ".join(state["recalled"])}

    graph = StateGraph(Memo)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_node("reply", reply)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", "reply")
    graph.add_edge("reply", END)
    return graph.compile(store=store)


def test_compiled_graph_reads_and_writes_through_the_store(local: LocalKnowhub) -> None:
    app = _graph(KnowhubStore(local))
    app.invoke({"user": "u1", "message": "remember I drink oolong tea"})
    app.invoke({"user": "u2", "message": "remember I drink espresso"})
    out = app.invoke({"user": "u1", "message": "what tea do I drink?"})
    assert out["reply"] == "I remember: I drink oolong tea"
    # what the graph stored is knowhub knowledge: owned by alice, keyed, searchable
    items = local.knowledge.list_keyed(["memories"])
    assert {tuple(i.namespace) for i in items} == {("memories", "u1"), ("memories", "u2")}
    assert all(i.owner == "user:alice" and i.scopes == ["user:alice"] for i in items)
    hits = local.knowledge.search("oolong", min_score=0)
    assert [h.knowledge.key for h in hits] == [items[-1].key]


# ---------------------------------------------------------------- through a real server

KEYS_TOML = f"""
[[auth.keys]]
key = "{ALICE_KEY}"
principal = "user:alice"

[[auth.keys]]
key = "{BOB_KEY}"
principal = "user:bob"

[[auth.keys]]
key = "{CAROL_KEY}"
principal = "user:carol"
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Server]:
    work = tmp_path_factory.mktemp("lg-served")
    process = _Server(write_plain_config(work / "knowhub.toml", work / "data", KEYS_TOML), work)
    process.start()
    yield process
    process.stop()


def test_isolation_through_the_server_with_two_keys(server: _Server) -> None:
    with KnowhubClient(server.base_url, ALICE_KEY) as a, KnowhubClient(server.base_url, BOB_KEY) as b:
        alice, bob = KnowhubStore(a), KnowhubStore(b)
        alice.put(("memories", "prefs"), "drink", {"text": "alice: green tea"})
        bob.put(("memories", "prefs"), "drink", {"text": "bob: espresso"})
        assert alice.get(("memories", "prefs"), "drink").value == {"text": "alice: green tea"}
        assert bob.get(("memories", "prefs"), "drink").value == {"text": "bob: espresso"}
        assert [i.value for i in bob.search(("memories",), query="green tea")] == [{"text": "bob: espresso"}]
        bob.delete(("memories", "prefs"), "drink")
        assert bob.get(("memories", "prefs"), "drink") is None
        assert alice.get(("memories", "prefs"), "drink") is not None
        assert bob.list_namespaces() == [] and alice.list_namespaces() == [("memories", "prefs")]
        app = _graph(alice)
        app.invoke({"user": "u9", "message": "remember 我喜欢乌龙茶"})
        assert app.invoke({"user": "u9", "message": "乌龙茶"})["reply"] == "I remember: 我喜欢乌龙茶"


def test_differential_through_the_server(server: _Server) -> None:
    """The same comparison over HTTP: namespaces and keys with '/', CJK and '' survive the
    query string, and remote paging matches."""
    with KnowhubClient(server.base_url, CAROL_KEY) as carol:
        assert _run_differential(KnowhubStore(carol), 4, 35, use_async=False) >= 35


def test_async_client_path_through_the_server(server: _Server) -> None:
    async def scenario() -> list[Any]:
        async with AsyncKnowhubClient(server.base_url, ALICE_KEY) as client:
            store = KnowhubStore(client)
            await store.aput(("async",), "k", {"text": "async value", "n": 2})
            await store.aput(("async", "deeper"), "k2", {"text": "second", "n": 5})
            got = await store.aget(("async",), "k")
            found = await store.asearch(("async",), filter={"n": {"$gt": 3}})
            spaces = await store.alist_namespaces(prefix=("async",))
            await store.adelete(("async",), "k")
            gone = await store.aget(("async",), "k")
            with pytest.raises(TypeError):
                store.get(("async",), "k2")  # a sync call on an async knowhub says what to do
            return [got, found, spaces, gone]

    got, found, spaces, gone = asyncio.run(scenario())
    assert got.value == {"text": "async value", "n": 2}
    assert [i.key for i in found] == ["k2"]
    assert spaces == [("async",), ("async", "deeper")]
    assert gone is None

"""knowhub.integrations.openai_agents with the real OpenAI Agents SDK (0.24): the real
``Runner`` against a scripted Responses API server on 127.0.0.1, and differentially
against the SDK's own ``SQLiteSession``."""

from __future__ import annotations

import asyncio
import copy
import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from agents import (  # noqa: E402
    Agent,
    OpenAIResponsesModel,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import Session, SessionSettings  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from knowhub.client import AsyncKnowhubClient, KnowhubClient, LocalKnowhub  # noqa: E402
from knowhub.config import Settings  # noqa: E402
from knowhub.errors import StorageError  # noqa: E402
from knowhub.integrations.openai_agents import KnowhubSession, items_to_messages, knowhub_tools  # noqa: E402
from tests.e2e.server_process import ServerProcess  # noqa: E402
from tests.support.scripted_responses import (  # noqa: E402
    ScriptedResponsesServer,
    all_text,
    call,
    last_tool_output,
    reasoning,
    scripted_responses,
    text,
)

set_tracing_disabled(True)  # the SDK would export traces to api.openai.com

SRC = str(Path(__file__).resolve().parents[2] / "src")
ALICE_KEY = "oai-alice-key-0123456789"
BOB_KEY = "oai-bob-key-0123456789"

#: Every item shape the SDK stores: input messages, reasoning, function calls and outputs,
#: output messages with content parts, Chinese text, odd-but-valid JSON.
SHAPES: list[dict[str, Any]] = [
    {"content": "我叫小明, I live in 杭州", "role": "user"},
    {"role": "user", "content": [{"type": "input_text", "text": "parts"}], "type": "message"},
    {"id": "rs_1", "summary": [{"text": "thinking", "type": "summary_text"}], "type": "reasoning"},
    {"arguments": "{\"city\": \"杭州\"}", "call_id": "call_1", "name": "weather", "type": "function_call",
     "id": "fc_1", "status": "completed"},
    {"call_id": "call_1", "output": "sunny", "type": "function_call_output"},
    {"id": "msg_1", "content": [{"annotations": [], "text": "It is sunny.", "type": "output_text"}],
     "role": "assistant", "status": "completed", "type": "message"},
    {"role": "system", "content": "be brief"},
    {"type": "custom", "payload": {"n": [1, 2.5, None, True], "s": "\u00e9\u4e2d"}},
]


@pytest.fixture
def kh(tmp_path: Path) -> Iterator[LocalKnowhub]:
    with LocalKnowhub(Settings.load(None, data_dir=tmp_path / "kh"), principal="user:alice") as local:
        yield local


@pytest.fixture
def model_server() -> Iterator[ScriptedResponsesServer]:
    with scripted_responses() as server:
        yield server


def make_agent(server: ScriptedResponsesServer, tools: list[Any] | None = None) -> Agent:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    return Agent(name="assistant", instructions="Answer briefly.", tools=tools or [],
                 model=OpenAIResponsesModel(model="scripted", openai_client=client))


@function_tool
def weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


def wait_for(found: Callable[[], Any], timeout_s: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


# ---------------------------------------------------------------------- protocol, differential


def test_is_an_sdk_session(kh: LocalKnowhub) -> None:
    assert isinstance(KnowhubSession("s", kh), Session)


async def _apply(session: Any, op: tuple[str, Any]) -> Any:
    name, arg = op
    if name == "add":
        return await session.add_items(copy.deepcopy(arg))
    if name == "get":
        return await session.get_items(arg) if arg != "default" else await session.get_items()
    if name == "pop":
        return await session.pop_item()
    return await session.clear_session()


def random_ops(seed: int, count: int) -> list[tuple[str, Any]]:
    rng = random.Random(seed)
    ops: list[tuple[str, Any]] = []
    for _ in range(count):
        r = rng.random()
        if r < 0.45:
            ops.append(("add", [rng.choice(SHAPES) for _ in range(rng.randint(0, 4))]))
        elif r < 0.8:
            ops.append(("get", rng.choice(["default", None, 0, 1, 2, 3, 7, 100, -1])))
        elif r < 0.95:
            ops.append(("pop", None))
        else:
            ops.append(("clear", None))
    return ops


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("settings_limit", [None, 3])
def test_random_operations_match_sqlite_session(kh: LocalKnowhub, seed: int, settings_limit: int | None) -> None:
    settings = SessionSettings(limit=settings_limit)

    async def run() -> None:
        ours = KnowhubSession(f"diff-{seed}", kh, session_settings=settings, commit_every=0)
        theirs = SQLiteSession(f"diff-{seed}", session_settings=settings)
        for step, op in enumerate(random_ops(seed, 120)):
            assert await _apply(ours, op) == await _apply(theirs, op), (step, op)
        assert await ours.get_items() == await theirs.get_items()
        theirs.close()

    asyncio.run(run())


def script_conversation(server: ScriptedResponsesServer) -> list[str]:
    """Three turns with reasoning and a tool call; fixed item ids so two runs match."""
    server.script(
        [reasoning("greet", "rs_a"), text("Hello Alice.", "msg_a")],
        [call("weather", {"city": "杭州"}, "w1")],
        [text("It is sunny in 杭州.", "msg_b")],
        [text("Goodbye.", "msg_c")],
    )
    return ["Hi, I am Alice.", "What is the weather in 杭州?", "Thanks!"]


async def converse(server: ScriptedResponsesServer, session: Any) -> list[str]:
    agent = make_agent(server, [weather])
    outputs = []
    for prompt in script_conversation(server):
        result = await Runner.run(agent, prompt, session=session)
        outputs.append(str(result.final_output))
    return outputs


@pytest.mark.parametrize("limit", [None, 3])
def test_runner_conversation_matches_sqlite_session(kh: LocalKnowhub, limit: int | None) -> None:
    settings = SessionSettings(limit=limit)

    async def run() -> None:
        with scripted_responses() as a, scripted_responses() as b:
            theirs = SQLiteSession("conv", session_settings=settings)
            ours = KnowhubSession("conv", kh, session_settings=settings)
            assert await converse(a, theirs) == await converse(b, ours) == ["Hello Alice.", "It is sunny in 杭州.", "Goodbye."]
            stored = await ours.get_items(100)
            assert stored == await theirs.get_items(100) and len(stored) == 9
            assert await ours.get_items() == await theirs.get_items()
            assert {item.get("type") for item in stored} >= {"reasoning", "function_call", "function_call_output", "message"}
            # the model saw the same history each turn
            assert [r["input"] for r in a.requests] == [r["input"] for r in b.requests]
            assert len(a.requests) == 4
            theirs.close()

    asyncio.run(run())


def test_run_sync_uses_a_new_loop_each_call(kh: LocalKnowhub, model_server: ScriptedResponsesServer) -> None:
    agent = make_agent(model_server)
    session = KnowhubSession("sync", kh)
    model_server.script([text("one", "m1")], [text("two", "m2")])
    assert Runner.run_sync(agent, "first", session=session).final_output == "one"
    assert Runner.run_sync(agent, "second", session=session).final_output == "two"
    assert len(asyncio.run(session.get_items())) == 4
    assert "first" in all_text(model_server.requests[1])


# ---------------------------------------------------------------------- memory


def test_turns_are_committed_once_and_memory_is_found_later(kh: LocalKnowhub, model_server: ScriptedResponsesServer) -> None:
    agent = make_agent(model_server, knowhub_tools(kh))

    async def run() -> None:
        first = KnowhubSession("day-1", kh)
        model_server.script([reasoning("noted"), text("Nice to meet you, Alice.")])
        await Runner.run(agent, "My name is Alice and I am allergic to peanuts.", session=first)
        assert [c.status for c in first.last_commits] == ["committed"]
        assert first.last_commits[0].archive.archive_uri == "ctx://default/users/alice/sessions/day-1"
        state = kh.context.get_session_items("day-1", 0)
        assert state.committed == state.total == 3  # user, reasoning, answer: all past the cursor
        # a second KnowhubSession on the same id (another process, a restart) commits nothing again
        again = KnowhubSession("day-1", kh)
        assert await again.commit() == []
        assert len(kh.context.list_commits()) == 1

        wait_for(lambda: kh.context.search_memory("peanuts allergic").blocks)
        later = KnowhubSession("day-2", kh)
        model_server.script([call("search_memory", {"query": "what is the user allergic to", "limit": 5})],
                            lambda body: [text("Memory says: " + last_tool_output(body))])
        result = await Runner.run(agent, "Remind me what I am allergic to?", session=later)
        assert "peanut" in last_tool_output(model_server.requests[-1]).lower()
        assert "ctx://default/users/alice/" in str(result.final_output)
        # knowhub's own tool calls are not committed as memory, the user's question is
        messages, used = items_to_messages(await later.get_items())
        assert used == [] and [m["role"] for m in messages] == ["user", "assistant"]

    asyncio.run(run())


def test_commit_every_batches_and_manual_commit(kh: LocalKnowhub, model_server: ScriptedResponsesServer) -> None:
    agent = make_agent(model_server)

    async def run() -> None:
        session = KnowhubSession("batched", kh, commit_every=2)
        model_server.script([text("a")], [text("b")], [text("c")])
        await Runner.run(agent, "I moved to Berlin last week.", session=session)
        assert kh.context.get_session_items("batched", 0).committed == 0
        await Runner.run(agent, "My sister Emma lives there too.", session=session)
        assert kh.context.get_session_items("batched", 0).committed == 4
        await Runner.run(agent, "I like cycling.", session=session)
        assert kh.context.get_session_items("batched", 0).committed == 4
        results = await session.commit()
        assert [r.status for r in results] == ["committed"] and kh.context.get_session_items("batched", 0).committed == 6
        off = KnowhubSession("manual", kh, commit_every=0)
        model_server.script([text("ok")])
        await Runner.run(agent, "Remember I drive a red car.", session=off)
        assert kh.context.get_session_items("manual", 0).committed == 0 and off.last_commits == []

    asyncio.run(run())


class FlakyCommits:
    """A knowhub whose first ``commit_session`` fails (the engine is down for a moment)."""

    def __init__(self, inner: LocalKnowhub) -> None:
        self.inner = inner
        self.context = self
        self.failures = 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner.context, name)

    def commit_session(self, *args: Any, **kwargs: Any) -> Any:
        if self.failures:
            self.failures -= 1
            raise StorageError("context engine unavailable")
        return self.inner.context.commit_session(*args, **kwargs)


def test_a_failed_commit_fails_open_and_is_retried(kh: LocalKnowhub, model_server: ScriptedResponsesServer,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    agent = make_agent(model_server)
    session = KnowhubSession("flaky", FlakyCommits(kh))
    model_server.script([text("first answer")], [text("second answer")])

    async def run() -> None:
        assert (await Runner.run(agent, "I work at Globex.", session=session)).final_output == "first answer"
        assert session.commit_failures == 1 and "will retry" in caplog.text
        assert kh.context.get_session_items("flaky", 0).committed == 0
        await Runner.run(agent, "And I commute by train.", session=session)
        assert kh.context.get_session_items("flaky", 0).committed == 4
        archive = kh.context.read_memory("ctx://default/users/alice/sessions/flaky", "L2").content_excerpt
        assert "Globex" in archive and "train" in archive

    asyncio.run(run())


def test_knowledge_tools(kh: LocalKnowhub, model_server: ScriptedResponsesServer) -> None:
    agent = make_agent(model_server, knowhub_tools(kh))
    model_server.script(
        [call("save_knowledge", {"task": "deploying the web app", "types": ["strategy"],
                                 "content": "Run database migrations before switching traffic."})],
        [text("saved")],
        [call("search_knowledge", {"query": "deploying the web app migrations", "limit": 3})],
        lambda body: [text(last_tool_output(body))],
        [call("read_memory", {"uri": "ctx://default/users/bob/x", "level": "L1"})],
        lambda body: [text(last_tool_output(body))],
    )

    async def run() -> None:
        await Runner.run(agent, "Remember how we deploy.", session=KnowhubSession("k1", kh))
        assert "Saved as knowledge" in last_tool_output(model_server.requests[1])
        result = await Runner.run(agent, "How do we deploy?", session=KnowhubSession("k2", kh))
        assert "migrations before switching traffic" in str(result.final_output)
        denied = await Runner.run(agent, "Read bob's memory.", session=KnowhubSession("k3", kh))
        assert str(denied.final_output).startswith("knowhub error (permission_denied)")

    asyncio.run(run())
    names = [tool.name for tool in knowhub_tools(kh)]
    assert names == ["search_memory", "read_memory", "remember", "search_knowledge", "save_knowledge"]
    assert all(tool.description and len(tool.description) > 40 for tool in knowhub_tools(kh))
    assert [t.name for t in knowhub_tools(kh, include=["search_memory"])] == ["search_memory"]


def test_two_users_are_isolated(kh: LocalKnowhub, model_server: ScriptedResponsesServer) -> None:
    bob = kh.with_user("bob")

    async def run() -> None:
        alice_session = KnowhubSession("shared-id", kh)
        bob_session = KnowhubSession("shared-id", kh, user_id="bob")
        model_server.script([text("Noted, Alice.")])
        await Runner.run(make_agent(model_server), "My secret code word is PINEAPPLE42.", session=alice_session)
        assert await bob_session.get_items() == []
        assert await bob_session.pop_item() is None
        await bob_session.clear_session()
        assert len(await alice_session.get_items()) == 2
        wait_for(lambda: kh.context.search_memory("secret code word PINEAPPLE42").blocks)
        model_server.script([call("search_memory", {"query": "secret code word PINEAPPLE42", "limit": 5})],
                            lambda body: [text(last_tool_output(body))])
        result = await Runner.run(make_agent(model_server, knowhub_tools(kh, user_id="bob")), "What is my code word?",
                                  session=bob_session)
        assert "PINEAPPLE42" not in str(result.final_output)
        assert all(b.uri.startswith("ctx://default/users/alice/") or "/agents/" in b.uri
                   for b in kh.context.search_memory("PINEAPPLE42").blocks)
        assert not [b for b in bob.context.search_memory("PINEAPPLE42").blocks if "PINEAPPLE42" in b.abstract]

    asyncio.run(run())


# ---------------------------------------------------------------------- over HTTP


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    work = tmp_path_factory.mktemp("oai-served")
    config = work / "knowhub.toml"
    config.write_text(f"""data_dir = "{(work / 'data').as_posix()}"

[server]
load_sample = false

[embedding]
provider = "hashing"

[context]
index_poll_interval_s = 0.05

[[auth.keys]]
key = "{ALICE_KEY}"
principal = "user:alice"

[[auth.keys]]
key = "{BOB_KEY}"
principal = "user:bob"
""", encoding="utf-8")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = SRC + (os.pathsep + old if old else "")
    server = ServerProcess(config, work)
    try:
        server.start(timeout_s=90)
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
    yield server
    server.stop()


def test_over_http_matches_sqlite_and_isolates_keys(served: ServerProcess) -> None:
    async def run() -> None:
        async with AsyncKnowhubClient(served.base_url, ALICE_KEY) as remote:
            with scripted_responses() as a, scripted_responses() as b:
                theirs = SQLiteSession("remote")
                ours = KnowhubSession("remote", remote)
                assert await converse(a, theirs) == await converse(b, ours)
                assert await ours.get_items() == await theirs.get_items()
                assert [r["input"] for r in a.requests] == [r["input"] for r in b.requests]
                for op in random_ops(9, 60):
                    assert await _apply(ours, op) == await _apply(theirs, op), op
                theirs.close()
            assert ours.commit_failures == 0
        with KnowhubClient(served.base_url, BOB_KEY) as bob:
            assert await KnowhubSession("remote", bob).get_items() == []
            with KnowhubClient(served.base_url, ALICE_KEY) as alice:
                commits = alice.context.list_commits()
                assert commits and commits[0]["archive"]["archive_uri"].endswith("/users/alice/sessions/remote")
                assert bob.context.list_commits() == []

    asyncio.run(run())

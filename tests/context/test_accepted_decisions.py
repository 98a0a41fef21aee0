"""Issue 19 §2/§7: a short reply accepting the assistant's proposal is the user's decision.

"doing it. uv." never names the topic: the decision memory names it from the proposal, cites
the reply and the proposal, and replaces the earlier value; a refusal or a hedge does not.
The chats are written for these tests (English and Chinese).
"""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.commit.slots import accepted_claims
from knowhub.providers.llm.local_context import run_extraction
from knowhub.providers.llm.local_context_accept import accepted_choice
from knowhub.providers.llm.local_context_assistant import SWITCHES
from knowhub.providers.llm.local_context_text import Turn
from knowhub.scope import RequestContext

from .timeline_support import superseded_pairs

CTX = RequestContext("acme", "bob")


@pytest.fixture(autouse=True)
def _accepted_decisions_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule is off by default (docs/benchmarks.md): these tests switch it on."""
    monkeypatch.setitem(SWITCHES, "accepted_decision", True)
MEM = "ctx://acme/users/bob/memories"
UV = "I'd switch the project from Poetry to uv: it resolves and installs about ten times faster."
OPTIONS = ("Two ways to fix it:\nOption A: keep Webpack and add a persistent cache.\n"
           "Option B: move the build to Vite, which starts in under a second.")


def _pair(proposal: str, reply: str, gap: int = 1) -> tuple[Turn, Turn]:
    return (Turn("a1", "assistant", "Assistant", proposal, 1, extra={"raw": proposal}),
            Turn("u2", "user", "User", reply, 1 + gap))


@pytest.mark.parametrize("reply", ["doing it. uv.", "ok let's go with that", "sounds good, ship it", "Agreed."])
def test_a_short_acceptance_takes_the_proposed_value(reply: str) -> None:
    choice = accepted_choice(*_pair(UV, reply))
    assert choice is not None and "uv" in choice.text
    claims = accepted_claims(choice.text, [v for _, v in choice.values if v])
    assert [(c.slot, c.value) for c in claims] == [("user|python package manager", "uv")]  # Poetry is what it leaves


def test_picking_an_option_takes_that_option_only() -> None:
    choice = accepted_choice(*_pair(OPTIONS, "yes, option B"))
    assert choice is not None and choice.option == "2"
    assert "Vite" in choice.text and "Webpack" not in choice.text
    assert [c.value for c in accepted_claims(choice.text)] == ["Vite"]
    first = accepted_choice(*_pair(OPTIONS, "the first one"))
    assert first is not None and "Webpack" in first.text and "Vite" not in first.text


def test_chinese_acceptance_and_choice() -> None:
    choice = accepted_choice(*_pair("建议把项目从 Poetry 换成 uv，安装快很多。", "行，就按这个来"))
    assert choice is not None and [c.value for c in accepted_claims(choice.text)] == ["uv"]
    picked = accepted_choice(*_pair("方案一：继续用钉钉机器人。\n方案二：改用企业微信机器人。", "选方案二吧"))
    assert picked is not None and "企业微信" in picked.text and "钉钉" not in picked.text


@pytest.mark.parametrize("reply", [
    "no, keep poetry", "Nah, we'll stay on Poetry.", "ok, let me think about it", "Great, thanks!",
    "ok but why is uv faster?", "不用了，还是用 Poetry。", "先不改，再想想。",
    "ok " + "and another thing about the deployment and the database " * 4,  # says more than yes: its own memory
])
def test_refusals_hedges_thanks_and_long_replies_accept_nothing(reply: str) -> None:
    assert accepted_choice(*_pair(UV, reply)) is None


def test_a_reply_that_says_more_than_yes_is_its_own_memory() -> None:
    assert accepted_choice(*_pair(UV, "Perfect. Do it. Does uv run on Python 3.11 on the build server?")) is None
    assert accepted_choice(*_pair("建议用 Django + MySQL。", "可以，就按这个来：Django + MySQL，借期 30 天，每人最多 3 本。")) is None


def test_only_the_immediate_reply_accepts_and_only_a_proposal_with_a_value() -> None:
    assert accepted_choice(*_pair(UV, "ok", gap=2)) is None  # something was said in between
    assert accepted_choice(*_pair("VACUUM reclaims space from dead rows.", "ok, sounds good")) is None


def test_the_extractor_writes_the_users_decision_citing_reply_then_proposal() -> None:
    messages = [{"id": "m1", "role": "user", "content": "Installs take forever in CI. Ideas?"},
                {"id": "m2", "role": "assistant", "content": UV},
                {"id": "m3", "role": "user", "content": "doing it. uv."}]
    found = [c for c in run_extraction("extract_entities_events", {"messages": messages})
             if c["metadata"].get("accepts")]
    assert len(found) == 1
    decision = found[0]
    assert decision["source_refs"] == ["m3", "m2"]
    assert decision["metadata"]["kind"] == "decision" and decision["metadata"]["origin"] == "user"
    assert "python package manager: uv" in decision["abstract"]
    assert decision["abstract"].startswith("User: doing it. uv.")  # the reply's own memory became the decision
    everything = run_extraction("extract_entities_events", {"messages": messages})
    assert sum(1 for c in everything if c["source_refs"][0] == "m3" and c["category"] == "events") == 1
    messages[2]["content"] = "no, keep poetry"
    refused = run_extraction("extract_entities_events", {"messages": messages})
    assert not [c for c in refused if c["metadata"].get("accepts")]
    assert [c for c in refused if c["metadata"].get("kind") == "rejected"]  # the refusal rule's memory


def _chat(svc: ContextEngineService, old: str, ask: str, proposal: str, reply: str) -> None:
    svc.commit_session(CTX, [{"id": "s1-0", "role": "user", "content": old, "timestamp": "2026-01-10T10:00:00Z"}],
                       options={"session_id": "s1"})
    svc.commit_session(CTX, [
        {"id": "s2-0", "role": "user", "content": ask, "timestamp": "2026-02-14T10:00:00Z"},
        {"id": "s2-1", "role": "assistant", "content": proposal, "timestamp": "2026-02-14T10:01:00Z"},
        {"id": "s2-2", "role": "user", "content": reply, "timestamp": "2026-02-14T10:02:00Z"}], options={"session_id": "s2"})


def test_an_accepted_proposal_replaces_the_earlier_decision(svc: ContextEngineService) -> None:
    _chat(svc, "We manage the Python dependencies with Poetry.", "Installs take forever in CI.", UV, "doing it. uv.")
    assert ("s1-0", "s2-2") in superseded_pairs(svc, CTX, MEM)  # the old decision → the acceptance
    svc.flush_index()
    blocks = svc.search_memory(CTX, "Which package manager do we use now?", top_k=10).blocks
    first = next(b for b in blocks if {"s1-0", "s2-2"} & set(b.metadata.get("source_refs") or []))
    assert first.metadata["source_refs"] == ["s2-2", "s2-1"]


def test_off_by_default_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SWITCHES, "accepted_decision", False)
    messages = [{"id": "m1", "role": "user", "content": "Installs take forever in CI. Ideas?"},
                {"id": "m2", "role": "assistant", "content": UV},
                {"id": "m3", "role": "user", "content": "doing it. uv."}]
    assert not [c for c in run_extraction("extract_entities_events", {"messages": messages}) if c["metadata"].get("accepts")]


def test_a_refused_proposal_replaces_nothing(svc: ContextEngineService) -> None:
    _chat(svc, "We manage the Python dependencies with Poetry.", "Installs take forever in CI.", UV, "no, keep poetry")
    assert superseded_pairs(svc, CTX, MEM) == set()


def test_a_chinese_option_pick_replaces_the_earlier_tool(svc: ContextEngineService) -> None:
    _chat(svc, "我们的通知用钉钉。", "公司下个月统一办公软件，通知怎么办？",
          "方案一：继续用钉钉机器人。\n方案二：改用企业微信机器人，跟公司统一。", "选方案二吧")
    assert ("s1-0", "s2-2") in superseded_pairs(svc, CTX, MEM)

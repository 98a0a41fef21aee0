"""Issue 19 §2/§7: update links come from the person's own choice or change, not from mentions.

Sentences here are written for these tests (general wordings, English and Chinese)."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.commit.quantities import quantities, topics_overlap
from knowhub.context.commit.slots import claims_in_text
from knowhub.scope import RequestContext

from .timeline_support import superseded_pairs

CTX = RequestContext("acme", "carol")
MEM = "ctx://acme/users/carol/memories"


def _commit(svc: ContextEngineService, session: str, day: str, *turns: tuple[str, str]) -> None:
    messages = [{"id": f"{session}-{i}", "role": role, "content": text, "timestamp": f"{day}T10:0{i}:00Z"}
                for i, (role, text) in enumerate(turns)]
    svc.commit_session(CTX, messages, options={"session_id": session})


def _values(text: str) -> set[tuple[str, str]]:
    return {(c.slot.split("|")[1], c.value) for c in claims_in_text(text) if "|qty|" not in c.slot}


# ---------------------------------------------------------------------- who decides

def test_an_assistants_later_value_never_replaces_a_persons_change_committed_late(svc: ContextEngineService) -> None:
    """Sessions may be committed out of order: the person's January change ("from Redis to
    Memcached"), committed after a March session where the assistant names Redis, is not
    superseded by the assistant's mention (it was, by "s2-1")."""
    _commit(svc, "s2", "2026-03-05", ("user", "Can you tidy the cache module?"),
            ("assistant", "Sure. We use Redis for the cache, so I kept the Redis client as it is."))
    _commit(svc, "s1", "2026-01-05", ("user", "We switched the cache from Redis to Memcached."))
    assert not [pair for pair in superseded_pairs(svc, CTX, MEM) if pair[0].startswith("s1-")]


def test_an_assistant_value_never_replaces_the_users_but_the_users_change_does(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "We use MySQL for the orders database."))
    _commit(svc, "s2", "2026-02-01", ("user", "How do I speed up the report query?"),
            ("assistant", "PostgreSQL is a good fit for window functions; in MySQL 8 you can use them too."))
    assert superseded_pairs(svc, CTX, MEM) == set()  # the assistant named another database in passing
    _commit(svc, "s3", "2026-03-01", ("user", "We switched the orders database to PostgreSQL last week."))
    assert ("s1-0", "s3-0") in superseded_pairs(svc, CTX, MEM)


def test_an_assistant_value_and_the_users_other_value_in_one_session_are_no_contradiction(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("assistant", "I would run the jobs with Sidekiq."),
            ("user", "We run background jobs with Resque."))
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, MEM, recursive=True) if c.is_node]
    assert not [n for n in nodes if n.metadata.get("conflict")]


# ---------------------------------------------------------------------- a mention is no choice

@pytest.mark.parametrize("text", [
    "At very low spring tides the morning boat cannot use the slip.",         # Spring (Boot)
    "The worker timed out on a slow render of the invoice.",                   # Render (cloud)
    "Move the cursor to the end of the line and press enter.",                 # Cursor (editor)
    "Show each trip with seats and car spaces left.",                           # spaces (indentation)
    "Offer the next trip with space on board.",
    "Generally I prefer plain pages and as little JavaScript as we can manage.",
    "She's a strong Django dev but new to this code base.",
    "Let's delete the PayPal code now.",
])
def test_a_passing_mention_claims_no_value(text: str) -> None:
    assert _values(text) == set(), text


@pytest.mark.parametrize(("text", "expected"), [
    ("We deploy on Render.", ("cloud", "Render")),
    ("These days I prefer spaces.", ("indentation", "spaces")),
    ("We take card payments with Mollie.", ("payment provider", "Mollie")),
    ("Background jobs run on Sidekiq.", ("job queue", "Sidekiq")),
    ("消息队列用 RocketMQ。", ("message queue", "RocketMQ")),
    ("缓存用Redis。", ("cache", "Redis")),                                      # no space before a Latin name
    ("老板说统一企业微信。", ("chat and alerting", "企业微信")),                  # not 微信 inside 企业微信
])
def test_a_choice_claims_its_value(text: str, expected: tuple[str, str]) -> None:
    assert expected in _values(text), (text, _values(text))


def test_a_value_that_was_used_before_is_no_current_claim() -> None:
    assert _values("他们原来用钉钉。") == set()
    assert _values("We used to use Jenkins for builds.") == set()


# ---------------------------------------------------------------------- vendors and tools change

def test_payment_provider_and_job_queue_changes_link(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "We take card payments with PayPal."),
            ("user", "Background jobs run on Sidekiq."))
    _commit(svc, "s2", "2026-02-10", ("user", "Card payments move from PayPal to Mollie next month."),
            ("user", "We replaced Sidekiq with GoodJob? No: we replaced Sidekiq with Resque."))
    links = superseded_pairs(svc, CTX, MEM)
    assert ("s1-0", "s2-0") in links
    assert ("s1-1", "s2-1") in links


def test_chinese_tool_swap_with_a_bare_change_verb_links(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "通知我们打算用 RabbitMQ 发。"))
    _commit(svc, "s2", "2026-02-10", ("user", "好，撤掉 RabbitMQ，换 Kafka。"))
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)


# ---------------------------------------------------------------------- quantities said as requests

def test_time_of_day_values_and_changes() -> None:
    assert [(q.unit, q.value) for q in quantities("The nightly export runs at 02:00.", False)] == [("clock", "02:00")]
    assert [(q.unit, q.value) for q in quantities("发布窗口是下午 3 点半。", True)] == [("clock", "15:30")]
    assert [q.unit for q in quantities("[2026-03-01 12:03:55] worker started", False)] == []  # a log time
    change = quantities("Move the nightly export to 3:30 pm.", False)
    assert [(q.unit, q.value, q.changed) for q in change] == [("clock", "15:30", True)]


def test_a_request_with_a_bare_number_takes_the_unit_and_leaves_the_old_value() -> None:
    [q] = quantities("Eight characters is too few for the code, can we go to twelve?", False)
    assert (q.unit, q.value, q.was, q.changed) == ("char", "12", "8", True)
    [q] = quantities("Make the cache keep entries 30 minutes instead of 10.", False)
    assert (q.unit, q.value, q.was) == ("min", "30", "10")
    [q] = quantities("同步间隔改到 5，别再 10 了。", True) or [None]
    assert q is None or q.value == "5"


def test_a_chinese_count_keeps_the_noun_after_its_measure_word() -> None:
    [old] = quantities("我们现在有 12 家分店。", True)
    [new] = quantities("分店总数变成 15 家。", True)
    assert "分店" in old.topic and topics_overlap(old.topic, new.topic) and new.changed


def test_a_changed_time_of_day_supersedes_the_earlier_one(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "仓库每天 9:00 开始同步库存，9:30 出报表。"))
    _commit(svc, "s2", "2026-02-10", ("user", "大家反馈 9:00 太早了。经理拍板：同步改到 10:30。"))
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)


def test_a_request_to_go_to_another_number_supersedes_with_the_value_it_leaves(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "Invite codes: a prefix, a dash, then eight characters."))
    _commit(svc, "s2", "2026-03-01", ("user", "Support says eight characters is too many to read out, can we go to six?"))
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)


def test_a_count_said_as_news_supersedes_the_old_count(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "我们现在有 12 家分店。"))
    _commit(svc, "s2", "2026-03-01", ("user", "好消息，又开了 3 家，分店总数变成 15 家。"))
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)


def test_a_change_that_names_no_topic_replaces_this_sessions_value(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "容器的内存上限是 1Gi，昨晚又被杀了。"),
            ("assistant", "把上限调大一些，再观察非堆内存。"), ("user", "改成 2Gi 之后稳定了。"))
    assert ("s1-0", "s1-2") in superseded_pairs(svc, CTX, MEM)


# ---------------------------------------------------------------------- the answer that carries a change out

def test_the_assistants_answer_that_carries_out_a_change_is_shown_with_it(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "We take card payments with PayPal."))
    _commit(svc, "s2", "2026-02-10", ("user", "Card payments move from PayPal to Mollie."),
            ("assistant", "Done: the checkout now calls Mollie's payments API, and I removed the PayPal adapter."))
    nodes = {(n.metadata.get("source_refs") or ["?"])[0]: n
             for n in (svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, f"{MEM}/events", recursive=True) if c.is_node)}
    assert nodes["s2-0"].metadata.get("confirmed_by") == [nodes["s2-1"].uri]
    assert ("s1-0", "s2-0") in superseded_pairs(svc, CTX, MEM)
    svc.flush_index()
    refs = [b.metadata.get("source_refs") for b in svc.search_memory(CTX, "Which provider takes card payments?", top_k=5).blocks]
    assert ["s2-0"] in refs and ["s2-1"] in refs
    assert refs.index(["s2-0"]) < refs.index(["s2-1"])


def test_an_unrelated_assistant_answer_confirms_nothing(svc: ContextEngineService) -> None:
    _commit(svc, "s1", "2026-01-05", ("user", "We take card payments with PayPal."))
    _commit(svc, "s2", "2026-02-10", ("user", "Card payments move from PayPal to Mollie."),
            ("assistant", "Here is the refund flow for the admin page."))
    nodes = [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, f"{MEM}/events", recursive=True) if c.is_node]
    assert not [n for n in nodes if n.metadata.get("confirmed_by")]

"""Issue 19 §1/§7: the statements a long user message leaves out of its summary get nodes.

Messages are written for these tests (general wordings, English and Chinese)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.providers.llm import local_context_rules as rules
from knowhub.scope import RequestContext

CTX = RequestContext("acme", "erin")
MEM = "ctx://acme/users/erin/memories"

LONG_EN = ("Quick one from the train, I commute from Haarlem to the office in Amsterdam every morning. "
           "The invoice export keeps timing out: the worker dies after thirty seconds when the customer has "
           "more than two thousand invoices, and the retry starts the whole export again from the first page. "
           "Can we stream the rows to the file instead of building the whole list in memory first?")
LONG_ZH = ("先说个题外话，我下个月要搬到苏州了，以后每周去上海办公室两天。"
           "导出发票的任务一直超时：客户发票超过两千张时，工作进程三十秒就被杀掉，重试又从第一页重新开始导出。"
           "能不能改成边查边写文件，不要先把整张列表放进内存？"
           "另外财务希望导出的文件按客户分成多个工作表，每个工作表的表头要带上开票日期、金额、税额和发票状态，"
           "金额统一保留两位小数，方便他们直接导入记账软件做月底对账。"
           "还有，导出完成以后要给申请人发一封邮件，邮件里附上下载链接，链接七天后失效，过期的文件由定时任务在夜里统一清理掉，"
           "清理的结果写进操作日志，方便以后审计的时候查到是谁在什么时候导出过哪些客户的发票数据。")


@pytest.fixture()
def svc(tmp_path: Path):
    assert rules.SWITCHES["user_parts"] is True  # on by default, for the unnamed user of an agent chat
    service = ContextEngineService(tmp_path / "ctx", durable=False)
    yield service
    service.close()


def _events(svc: ContextEngineService) -> list:
    return [svc.get_node(CTX, c.uri) for c in svc.list_children(CTX, f"{MEM}/events", recursive=True) if c.is_node]


@pytest.mark.parametrize(("text", "second_topic"), [(LONG_EN, "Haarlem"), (LONG_ZH, "苏州")])
def test_a_long_message_gets_a_node_for_what_its_summary_leaves_out(svc: ContextEngineService, text: str,
                                                                   second_topic: str) -> None:
    svc.commit_session(CTX, [{"id": "m1", "role": "user", "content": text, "timestamp": "2026-03-02T08:00:00Z"}],
                       options={"session_id": "s1"})
    events = _events(svc)
    assert all(n.metadata.get("source_refs") == ["m1"] for n in events)
    whole = [n for n in events if n.metadata.get("kind") == "turn"]
    parts = [n for n in events if n.metadata.get("kind") == "turn part"]
    assert len(whole) == 1 and parts
    summary_has_it = second_topic in whole[0].abstract
    assert summary_has_it or any(second_topic in n.abstract for n in parts)
    for part in parts:  # a part says what the summary does not
        assert re.split(r": |：", part.abstract, maxsplit=1)[1][:30] not in whole[0].abstract  # after the head


def test_a_short_message_or_the_switch_off_gives_no_parts(svc: ContextEngineService, monkeypatch: pytest.MonkeyPatch) -> None:
    svc.commit_session(CTX, [{"id": "m1", "role": "user", "content": "The export times out after thirty seconds.",
                              "timestamp": "2026-03-02T08:00:00Z"}], options={"session_id": "s1"})
    monkeypatch.setitem(rules.SWITCHES, "user_parts", False)
    svc.commit_session(CTX, [{"id": "m2", "role": "user", "content": LONG_EN, "timestamp": "2026-03-03T08:00:00Z"}],
                       options={"session_id": "s2"})
    assert not [n for n in _events(svc) if n.metadata.get("kind") == "turn part"]


def test_an_assistant_message_gets_no_user_parts(svc: ContextEngineService) -> None:
    svc.commit_session(CTX, [{"id": "m1", "role": "user", "content": "How do I stream the export?",
                              "timestamp": "2026-03-02T08:00:00Z"},
                             {"id": "m2", "role": "assistant", "content": LONG_EN, "timestamp": "2026-03-02T08:01:00Z"}],
                       options={"session_id": "s1"})
    assert not [n for n in _events(svc) if n.metadata.get("kind") == "turn part"]


def test_a_named_speakers_long_turn_gets_no_parts(svc: ContextEngineService) -> None:
    """Between two named people (a LoCoMo-style transcript) a long turn is one move: no parts."""
    svc.commit_session(CTX, [{"id": "m1", "role": "user", "name": "Erin", "content": LONG_EN,
                              "timestamp": "2026-03-02T08:00:00Z"},
                             {"id": "m2", "role": "assistant", "name": "Jo", "content": LONG_ZH,
                              "timestamp": "2026-03-02T08:01:00Z"}], options={"session_id": "s1"})
    assert not [n for n in _events(svc) if n.metadata.get("kind") == "turn part"]

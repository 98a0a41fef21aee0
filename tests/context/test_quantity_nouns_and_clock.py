"""A quantity change replaces only a value of the same thing, and a part of day carries to the
bare time a change moves to (review7b's R6 and R1)."""

from __future__ import annotations

import pytest

from knowhub.context import ContextEngineService
from knowhub.context.commit.quantities import quantities
from knowhub.scope import RequestContext

from .timeline_support import commit_texts, superseded_pairs

CTX = RequestContext("acme", "bob")
MEM = "ctx://acme/users/bob/memories"


@pytest.mark.parametrize(("sentence", "cjk"), [
    ("The import batch is 500 rows, so let's cut the page size to 50 rows.", False),
    ("Batch stays at 500 rows; set the page size to 50.", False),
    ("批量是 500 条，把分页大小改成 50 条。", True),
])
def test_a_change_of_another_noun_does_not_take_the_earlier_value_as_its_own(sentence: str, cjk: bool) -> None:
    [qty] = quantities(sentence, cjk)
    assert qty.value == "50" and qty.was == ""
    assert not {"batch", "批量"} & set(qty.topic)  # the page size's topic, not the batch's


@pytest.mark.parametrize(("sentence", "cjk", "topic"), [
    ("The writer batch of 500 rows is too small, let's go to 2,000 rows.", False, "batch"),
    ("每批 500 条太碎了，改成 1000 条。", True, "每批"),
    ("每批 500 条太碎了，能不能改成 1000 条？", True, "每批"),
    ("The writer batch is 500 rows, could we maybe go to 2,000 rows?", False, "batch"),
    ("six characters is one too many, can we go to five?", False, ""),
])
def test_a_change_of_the_same_value_still_names_what_it_leaves(sentence: str, cjk: bool, topic: str) -> None:
    [qty] = quantities(sentence, cjk)
    assert not topic or topic in qty.topic
    assert qty.changed


def test_another_quantity_in_a_change_message_keeps_its_value_current(svc: ContextEngineService) -> None:
    commit_texts(svc, CTX, "s1", "2026-01-10", "The importer batch is 500 rows.")
    commit_texts(svc, CTX, "s2", "2026-02-14", "The importer batch is 500 rows, so let's cut the page size to 50 rows.")
    assert superseded_pairs(svc, CTX, MEM) == set()
    commit_texts(svc, CTX, "s3", "2026-03-14", "Let's raise the importer batch to 1,000 rows.")
    assert ("s1-0", "s3-0") in superseded_pairs(svc, CTX, MEM)


@pytest.mark.parametrize(("sentence", "value"), [
    ("下午 3 点半改成 4 点。", "16:00"),
    ("晚上 8 点改到 10 点。", "22:00"),
    ("傍晚 5 点的会挪到 6 点半。", "18:30"),
    ("Move the standup from 3:30 pm to 4:00.", "16:00"),
    ("下午 3 点改成上午 10 点。", "10:00"),  # an explicit part of day wins
])
def test_a_part_of_day_carries_to_the_bare_time_of_the_same_change(sentence: str, value: str) -> None:
    clock = [q for q in quantities(sentence, not sentence.isascii()) if q.unit == "clock"]
    assert [q.value for q in clock] == [value]


@pytest.mark.parametrize(("sentence", "value"), [
    ("例会定在晚上 8 点。", "20:00"),
    ("例会定在中午 12 点。", "12:00"),
    ("例会定在中午 1 点。", "13:00"),
    ("备份定在凌晨 2 点。", "02:00"),
    ("备份定在晚上 12 点。", "00:00"),
])
def test_chinese_parts_of_day(sentence: str, value: str) -> None:
    assert [q.value for q in quantities(sentence, True) if q.unit == "clock"] == [value]


@pytest.mark.parametrize(("sentence", "cjk", "value"), [
    ("The demo is at 3 pm, so move the standup to 10:30", False, "10:30"),
    ("After the 2 pm review, change the backup window to 11:00", False, "11:00"),
    ("下午 3 点评审，把站会改到 10 点", True, "10:00"),
])
def test_a_part_of_day_is_not_carried_to_the_time_of_another_thing(sentence: str, cjk: bool, value: str) -> None:
    """review8: "3 pm … move the standup to 10:30" gave 22:30 (the demo's pm carried over)."""
    [clock] = [q for q in quantities(sentence, cjk) if q.unit == "clock"]
    assert clock.value == value


@pytest.mark.parametrize(("sentence", "value"), [
    ("The call moves from 11 am to 1:00.", "13:00"),  # forward over noon, not back to 1 am
    ("Move the sync from 11:30 am to 12:30.", "12:30"),
    ("晚上 11 点改到 12 点。", "00:00"),  # midnight, not noon
    ("晚上 11 点改到 1 点。", "01:00"),
    ("中午 12 点改到 1 点。", "13:00"),
    ("上午 11 点改到 12 点。", "12:00"),
    ("Push the deploy from 11 pm to 12:30.", "00:30"),
    ("The review moves from 10 am to 9:00.", "09:00"),  # an earlier time of the same morning stays
    ("The review moves from 1 pm to 11:00.", "11:00"),  # back over noon: the nearer reading
    ("下午 3 点半改成 4 点。", "16:00"),
])
def test_a_carried_time_crosses_noon_or_midnight_to_the_nearer_reading(sentence: str, value: str) -> None:
    """review8 (not fixed then): "from 11 am to 1:00" gave 01:00 and "晚上 11 点改到 12 点" 12:00.
    A bare time of the same change is read in the half of the day that puts it nearer the
    earlier time (two hours forward over noon, not ten hours back)."""
    clock = [q for q in quantities(sentence, not sentence.isascii()) if q.unit == "clock"]
    assert [q.value for q in clock] == [value]

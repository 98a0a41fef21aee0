"""Property tests: a log cut at any byte repairs to exactly the records that were whole."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowhub.errors import CorruptStoreError
from knowhub.storage import JsonlLog

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
    | st.sampled_from(["北京", "知识树", "C++", "line\nbreak", '引号"和\\反斜杠'])
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_records = st.dictionaries(_text, _values, max_size=4)
# A line without "{" can never be a JSON object, so it is garbage by construction.
_garbage = st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"{", b"x"))


def _write(path: Path, records: list[dict[str, Any]]) -> list[int]:
    """Append records one by one; return the byte position where each line ends."""
    ends = []
    with JsonlLog(path, durable=False) as log:
        for record in records:
            log.append(record)
            ends.append(log.size())
    return ends


def _read(path: Path) -> list[dict[str, Any]]:
    with JsonlLog(path, durable=False) as log:
        return [record for _, record in log.scan()]


@settings(max_examples=150, deadline=None)
@given(records=st.lists(_records, min_size=1, max_size=12), data=st.data())
def test_cut_at_any_byte_repairs_to_the_whole_prefix(
    records: list[dict[str, Any]], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        ends = _write(path, records)
        cut = data.draw(st.integers(min_value=0, max_value=ends[-1]), label="cut")
        os.truncate(path, cut)
        whole = sum(1 for end in ends if end <= cut)
        # Before repair, readers already stop cleanly at the torn tail.
        assert _read(path) == records[:whole]
        with JsonlLog(path, durable=False) as log:
            removed = log.repair()
            assert removed == cut - (ends[whole - 1] if whole else 0)
            assert [r for _, r in log.scan()] == records[:whole]
            # The repaired log accepts new appends that read back in order.
            log.append({"after": "repair"})
        assert _read(path) == [*records[:whole], {"after": "repair"}]


@settings(max_examples=100, deadline=None)
@given(records=st.lists(_records, min_size=0, max_size=8), garbage=_garbage)
def test_garbage_tail_is_removed(records: list[dict[str, Any]], garbage: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        _write(path, records)
        size = path.stat().st_size
        with open(path, "ab") as fh:
            fh.write(garbage)
        assert _read(path) == records
        with JsonlLog(path, durable=False) as log:
            assert log.repair() == len(garbage)
        assert path.stat().st_size == size
        assert _read(path) == records


@settings(max_examples=100, deadline=None)
@given(
    before=st.lists(_records, min_size=0, max_size=5),
    after=st.lists(_records, min_size=1, max_size=5),
    garbage=_garbage,
)
def test_garbage_in_the_middle_is_corruption(
    before: list[dict[str, Any]], after: list[dict[str, Any]], garbage: bytes
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        _write(path, before)
        bad_at = path.stat().st_size
        with open(path, "ab") as fh:
            fh.write(garbage + b"\n")
        _write(path, after)
        size = path.stat().st_size
        with JsonlLog(path, durable=False) as log, pytest.raises(CorruptStoreError) as info:
            log.repair()
        assert info.value.offset == bad_at
        assert path.stat().st_size == size

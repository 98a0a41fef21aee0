"""The long technical chats (benchmarks/data/tech_chats_*.json) and their benchmark's pieces.

The chats are hand-written; these checks keep the labels honest when someone edits them:
every gold id is a message of the chat, every type is known, both languages have at least
two chats of several sessions with user and assistant turns, and BM25 over Chinese text
matches words (bm25s's own tokenizer would keep a Chinese run as one token).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmarks.bench_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


def _load_bench() -> ModuleType:
    return load_benchmark("tech_chat_bench.py")


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load_bench()


@pytest.mark.parametrize("data", ["tech_chats", "tech_chats_fresh", "tech_chats_long"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chats_are_well_formed(bench: ModuleType, lang: str, data: str) -> None:
    chats = bench.load_chats([lang], data)
    assert len(chats) >= (1 if data == "tech_chats_long" else 2)
    for chat in chats:
        assert chat["language"] == lang
        assert len(chat["sessions"]) >= 3
        ids = [m["id"] for s in chat["sessions"] for m in s["messages"]]
        assert len(ids) == len(set(ids))
        roles = {m["role"] for s in chat["sessions"] for m in s["messages"]}
        assert roles == {"user", "assistant"}
        dates = [s["date"] for s in chat["sessions"]]
        assert dates == sorted(dates)
        types = set()
        for q in chat["questions"]:
            assert q["type"] in bench.TYPES
            assert q["gold"] and set(q["gold"]) <= set(ids), q["id"]
            types.add(q["type"])
        # the dev set has no contradiction questions, the fresh set no "assistant" type
        assert len(types) >= 7, f"{chat['id']} lacks {set(bench.TYPES) - types}"


@pytest.mark.parametrize("which", ["fresh", "long", "xl", "xl2", "xl3"])
def test_built_chats_match_their_source(which: str) -> None:
    """Each set's JSON files are what build_fresh_chats.py makes of their *.txt sources."""
    import json

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import build_fresh_chats

    src, prefix, _ = build_fresh_chats.SETS[which]
    built = [build_fresh_chats.parse(p) for p in sorted(src.glob("*.txt"))]
    assert built
    for lang in sorted({c["language"] for c in built}):
        stored = json.loads((ROOT / "benchmarks" / "data" / f"{prefix}_{lang}.json").read_text(encoding="utf-8"))
        assert stored["conversations"] == [c for c in built if c["language"] == lang]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_long_chats_are_long_single_projects(bench: ModuleType, lang: str) -> None:
    """Issue 19 §7's long set: one project per language, 12+ sessions, 120+ messages, 45+ questions
    of every type the bench knows, gold in assistant messages too."""
    chats = bench.load_chats([lang], "tech_chats_long")
    assert len(chats) == 1
    chat = chats[0]
    msgs = {m["id"]: m for s in chat["sessions"] for m in s["messages"]}
    assert len(chat["sessions"]) >= 12 and len(msgs) >= 120
    assert sum(len(m["content"]) for m in msgs.values()) > (100_000 if lang == "en" else 60_000)
    assert len(chat["questions"]) >= 45
    assert {q["type"] for q in chat["questions"]} == set(bench.TYPES)
    assert any(msgs[g]["role"] == "assistant" for q in chat["questions"] for g in q["gold"])


def test_builder_rejects_unknown_labels(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import build_fresh_chats

    src = tmp_path / "x.txt"
    src.write_text("%%chat c en T\n%%session s1 2026-01-01T00:00:00+00:00\n%%U a\nhi\n%%q fact | q? | b\n",
                   encoding="utf-8")
    with pytest.raises(ValueError, match="unknown labels"):
        build_fresh_chats.parse(src)


def test_bm25_over_chinese_matches_words(bench: ModuleType) -> None:
    bm25 = bench.BM25Messages(["a", "b", "c"], ["借期改成二十一天", "日志采集用 Go 写", "The API runs on port 8080"])
    assert bm25.search("现在的借期是多少天", 1) == ["a"]
    assert bm25.search("which port does the API use", 1) == ["c"]


def test_one_user_merges_a_language(bench: ModuleType) -> None:
    merged = bench.one_user(bench.load_chats(["en", "zh"]))
    assert [m["id"] for m in merged] == ["en-user", "zh-user"]
    for m in merged:
        dates = [s["date"] for s in m["sessions"]]
        assert dates == sorted(dates)
        assert len({s["id"] for s in m["sessions"]}) == len(m["sessions"])


def test_whatif_specs_parse_to_retriever_overrides(bench: ModuleType) -> None:
    import dataclasses

    from knowhub.context.retrieval.l0_retriever import RetrieverConfig

    spec = bench.parse_whatif("max_df_ratio=none,vector_weight=1.0,prf_docs=2")
    assert spec == {"max_df_ratio": None, "vector_weight": 1.0, "prf_docs": 2}
    assert dataclasses.replace(RetrieverConfig(), **spec).prf_docs == 2
    with pytest.raises(TypeError):
        dataclasses.replace(RetrieverConfig(), **bench.parse_whatif("no_such_knob=1"))



def test_a_language_the_set_lacks_is_skipped(bench: ModuleType) -> None:
    """xl3 is English only: ``--lang all`` reads its English file; a set with no file at all
    stops with one line, not a traceback."""
    assert {c["language"] for c in bench.load_chats(["en", "zh"], "tech_chats_xl3")} == {"en"}
    with pytest.raises(SystemExit, match="no chats for 'no_such_set'"):
        bench.load_chats(["en", "zh"], "no_such_set")

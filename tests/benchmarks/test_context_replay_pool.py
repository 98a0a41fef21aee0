"""benchmarks/context_replay_pool.py: the three-part verdict over two sources (chosen leave
one conversation out on the pool, neither source's pooled figure lower, the right sign on a
majority of each source's folds), and two of its rules on synthetic conversations."""

from __future__ import annotations

from types import ModuleType

from tests.benchmarks.bench_modules import load_benchmark


def _load() -> ModuleType:
    return load_benchmark("context_replay_pool.py")


def _per(values: dict[str, list[float]]) -> dict[str, list[tuple[int, float]]]:
    return {cid: [(1, v) for v in rows] for cid, rows in values.items()}


BASE = {"a1": [0.5, 0.5], "a2": [0.5, 0.5], "a3": [0.5, 0.5], "b1": [0.5, 0.5], "b2": [0.5, 0.5]}
SOURCES = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2"]}


def test_verdict_needs_a_majority_of_folds_up_in_each_source() -> None:
    bench = _load()
    good = {"a1": [1.0, 0.5], "a2": [1.0, 0.5], "a3": [0.5, 0.5], "b1": [1.0, 0.5], "b2": [1.0, 0.5]}
    result = bench.verdict([("base", _per(BASE)), ("x g=1", _per(good))], "x ", SOURCES)
    assert result["passes"]
    assert result["sources"]["A"]["up"] == 2 and result["sources"]["B"]["up"] == 2
    # source B: one fold up, one unchanged — half is no majority
    half = dict(good, b2=[0.5, 0.5])
    assert not bench.verdict([("base", _per(BASE)), ("x g=1", _per(half))], "x ", SOURCES)["passes"]
    # a rule that lowers source B's pooled figure fails even with the pool up
    lower = dict(good, b1=[1.0, 0.5], b2=[0.0, 0.0])
    result = bench.verdict([("base", _per(BASE)), ("x g=1", _per(lower))], "x ", SOURCES)
    assert not result["passes"] and result["sources"]["B"]["after"] < result["sources"]["B"]["before"]


def _conversation(cid: str) -> dict:
    long_turn = "I finally repaired the old sailboat engine with my brother last weekend in the harbour."
    turns = [{"dia_id": f"D1:{i}", "speaker": "Ana" if i % 2 else "Ben", "text": "Ha, nice!"} for i in range(1, 12)]
    turns.append({"dia_id": "D2:1", "speaker": "Ana", "text": long_turn})
    return {"sample_id": cid, "speakers": ["Ana", "Ben"],
            "sessions": [{"index": 1, "date_time": "1:00 pm on 5 May, 2024", "turns": turns[:11]},
                         {"index": 2, "date_time": "1:00 pm on 9 May, 2024", "turns": turns[11:]}],
            "qa": [{"question": "What did Ana repair on the sailboat?", "category": 1, "evidence": ["D2:1"]}]}


def _dump(cid: str) -> dict:
    blocks = [{"uri": f"ctx://{cid}/{i}", "score": 1.0 - i / 100, "refs": [f"D1:{i}"], "sess": "s1", "redundant": False}
              for i in range(1, 12)]
    blocks.append({"uri": f"ctx://{cid}/12", "score": 0.5, "refs": ["D2:1"], "sess": "s2", "redundant": False})
    return {"conv": cid, "cat": 1, "ev": ["D2:1"], "blocks": blocks}


def test_short_turn_prior_lets_the_long_turn_into_the_budget() -> None:
    bench = _load()
    conv = _conversation("c1")
    replay = bench.PoolReplay([_dump("c1")], [conv])
    assert replay.evaluate(None)["c1"] == [(1, 0.0)]  # eleven short turns fill the ten slots
    rules = dict((name, rule) for name, rule in replay.pool_variants() if name.startswith("short "))
    assert replay.evaluate(rules["short n=8 a=1.0"])["c1"] == [(1, 1.0)]


def test_entity_pull_needs_a_word_the_question_and_the_top_hit_share() -> None:
    bench = _load()
    conv = _conversation("c1")
    dump = _dump("c1")
    replay = bench.PoolReplay([dump], [conv])
    pull = replay.entity_pull(40, False)
    # the top hit ("Ha, nice!") shares no content word with the question: nothing moves
    assert [b["refs"] for b in pull(dump, [dict(b) for b in dump["blocks"]])] == [b["refs"] for b in dump["blocks"]]
    conv["sessions"][0]["turns"][0]["text"] = "The sailboat needs work."
    replay = bench.PoolReplay([_dump("c1")], [conv])
    moved = replay.entity_pull(40, False)(replay.dump[0], [dict(b) for b in replay.dump[0]["blocks"]])
    assert moved[9]["refs"] == ["D2:1"]  # another session's turn on the same thing takes the tenth slot

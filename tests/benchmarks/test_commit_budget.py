"""Quality benchmarks lift the commit time budget and warn about partial commits (benchmarks/_commit_budget.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowhub.context import ContextEngineService
from knowhub.limits import MessageLimits
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import RequestContext
from tests.benchmarks.bench_modules import load_benchmark

MESSAGES = [{"id": "m1", "role": "user", "name": "User",
             "content": "I moved to Porto last month and we use PostgreSQL 16 for the booking service."}]


def test_bench_limits_keep_every_cap_but_time() -> None:
    budget = load_benchmark("_commit_budget.py")
    product = MessageLimits()
    assert budget.BENCH_LIMITS.time_budget_s >= 3600
    assert budget.BENCH_LIMITS.max_candidates == product.max_candidates
    assert budget.BENCH_LIMITS.max_total_chars == product.max_total_chars


def test_a_partial_commit_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    budget = load_benchmark("_commit_budget.py")
    ctx = RequestContext("bench", "u1", agent_id="a1")
    spent = ContextEngineService(tmp_path / "spent", durable=False, embedder=HashingEmbedder(),
                                 limits=MessageLimits(time_budget_s=1e-9))
    result = budget.checked_commit(spent, ctx, MESSAGES, {"session_id": "s1"})
    assert result.status == "partial"
    assert "is partial" in capsys.readouterr().err
    spent.close()

    lifted = ContextEngineService(tmp_path / "lifted", durable=False, embedder=HashingEmbedder(),
                                  limits=budget.BENCH_LIMITS)
    result = budget.checked_commit(lifted, ctx, MESSAGES, {"session_id": "s1"})
    assert result.status == "committed"
    assert "is partial" not in capsys.readouterr().err
    lifted.close()

"""LocalAgent routing keeps only items whose task matches the query: it never pads."""

from __future__ import annotations

from knowhub.providers.llm import LocalAgent, build_task_messages


def route(items: list[dict[str, object]], query: str, k: int = 1) -> list[int]:
    messages = build_task_messages(
        "route_knowledge", "route", {"query": query, "k": k, "items": items}, {"type": "object"}
    )
    return LocalAgent().chat(messages, {"type": "object"})["ids"]


def test_only_matching_tasks_are_routed_best_first() -> None:
    items = [{"idx": 0, "types": ["tool"], "task": "postgres backup with pg_dump nightly"}]
    items += [{"idx": i, "types": ["tool"], "task": f"unrelated topic number {i}"} for i in range(1, 9)]
    items.append({"idx": 9, "types": ["tool"], "task": "postgres backup restore pg_dump nightly cron"})
    picked = route(items, "postgres backup restore cron", k=5)
    assert picked == [9, 0]  # 10 slots, two matching tasks: no unrelated item fills the rest


def test_without_any_task_match_nothing_is_routed() -> None:
    items = [{"idx": i, "types": ["usecase"], "task": f"话题 {i}"} for i in range(6)]
    assert route(items, "kubernetes", k=2) == []


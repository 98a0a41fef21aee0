"""LocalAgent routing fuses the task match with the caller's recall order."""

from __future__ import annotations

from knowhub.providers.llm import LocalAgent, build_task_messages


def route(items: list[dict[str, object]], query: str, k: int = 1) -> list[int]:
    messages = build_task_messages(
        "route_knowledge", "route", {"query": query, "k": k, "items": items}, {"type": "object"}
    )
    return LocalAgent().chat(messages, {"type": "object"})["ids"]


def test_first_recalled_item_with_a_partial_task_match_stays_ahead() -> None:
    # idx 0 was recalled first (its content matched); its task matches the query partly.
    # idx 9 was recalled last; its task matches a little better. Recall order is evidence.
    items = [{"idx": 0, "types": ["tool"], "task": "postgres backup with pg_dump nightly"}]
    items += [{"idx": i, "types": ["tool"], "task": f"unrelated topic number {i}"} for i in range(1, 9)]
    items.append({"idx": 9, "types": ["tool"], "task": "postgres backup restore pg_dump nightly cron"})
    picked = route(items, "postgres backup restore cron", k=1)
    assert picked[0] == 0
    assert 9 in picked


def test_without_any_task_match_the_recall_order_is_kept() -> None:
    items = [{"idx": i, "types": ["usecase"], "task": f"话题 {i}"} for i in range(6)]
    assert route(items, "kubernetes", k=2) == [0, 1, 2, 3]

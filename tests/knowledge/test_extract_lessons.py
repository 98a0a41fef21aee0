"""Offline extraction of lessons and the profile cues added for issue 19 §4.

Sentences here are written for the tests, not copied from either labelled set.
"""

from __future__ import annotations

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.providers.embedding import HashingEmbedder
from knowhub.providers.llm.local_knowledge import extract_knowledge
from knowhub.providers.llm.local_knowledge_lessons import is_lesson
from knowhub.scope import Principal


def _labels(*messages: tuple[str, str]) -> list[str]:
    payload = {
        "messages": [{"id": f"m{i}", "role": r, "content": c} for i, (r, c) in enumerate(messages)]
    }
    out = []
    for item in extract_knowledge(payload, None)["items"]:
        for kind in item["types"]:
            out.append(f"{kind}:{item['tags']['category']}" if kind == "user_profile" else kind)
    return sorted(out)


def test_the_postgres_lock_timeout_lesson_is_kept(tmp_path) -> None:
    """The issue's example: a clear lesson in a conversation used to yield nothing."""
    messages = [
        {"id": "u1", "role": "user", "content": "Our Alembic migration froze production for ten minutes."},
        {"id": "a1", "role": "assistant", "content": "The ALTER TABLE queued behind an open transaction."},
        {"id": "u2", "role": "user", "content": (
            "Setting lock_timeout to 3s before the ALTER fixed it, the migration now gives up "
            "quickly and we retry. Lesson learned: set lock_timeout on every Postgres migration."
        )},
    ]
    alice = Principal.of("user:alice")
    with KnowledgeHub(tmp_path / "kh", embedder=HashingEmbedder()) as hub:
        saved = hub.extract(alice, messages)
    lessons = [i for i in saved if "strategy" in i.types]
    assert len(lessons) == 1  # cause, fix and rule of one message are one item
    assert "lock_timeout" in lessons[0].content and "Lesson learned" in lessons[0].content
    assert "u2" in lessons[0].source["message_ids"]


@pytest.mark.parametrize(
    "text",
    [
        "Turns out the cron job ran in UTC, not local time.",
        "What finally fixed the flaky upload was raising the proxy read timeout.",
        "Pinning the base image digest did the trick.",
        "Note to self: vacuum the big tables before the nightly export.",
        "Next time the disk fills up, look at the journald size first.",
        "The crash was due to a null header from the old client.",
        "排查了一下午，原来是证书过期了。",
        "记住：生产环境的配置不要提交到仓库里。",
        "通过给查询加复合索引解决了慢查询。",
        "把重试次数改成三次之后就没再出现超时。",
        "下次遇到内存溢出，先导出堆快照再重启。",
    ],
)
def test_lessons(text: str) -> None:
    assert is_lesson(text)
    assert _labels(("user", text)) == ["strategy"]


@pytest.mark.parametrize(
    "text",
    [
        "Not sure what the root cause is yet.",
        "Maybe the fix was the restart, maybe not.",
        "The patch didn't fix the crash.",
        "The lesson plan for Monday is still missing.",
        "谢谢，问题解决了！",
        "还不知道原因是什么。",
        "可能是网络的问题，解决办法还没想好。",
        "Let's try it next week.",
    ],
)
def test_unresolved_or_unrelated_is_not_a_lesson(text: str) -> None:
    assert not is_lesson(text)
    assert _labels(("user", text)) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm more of a terminal person.", ["user_profile:preference"]),
        ("I'm a big fan of type hints.", ["user_profile:preference"]),
        ("我偏向于用 Go 写后端服务。", ["user_profile:preference"]),
        ("Most evenings I review the open pull requests.", ["user_profile:habit"]),
        ("我们团队每三天做一次代码评审。", ["user_profile:habit"]),
        ("Nobody can push to main directly here.", ["user_profile:constraint"]),
        ("We have a tight budget for cloud spend.", ["user_profile:constraint"]),
        ("I lead the platform team at an insurance company.", ["user_profile:background"]),
        ("我在一家医院的信息科部门。", ["user_profile:background"]),
        ("Release steps: (1) freeze the branch (2) build the images (3) announce.", ["plan"]),
    ],
)
def test_profile_and_plan_cues(text: str, expected: list[str]) -> None:
    assert _labels(("user", text)) == expected


def test_a_past_tense_never_is_a_remark_not_a_constraint() -> None:
    assert _labels(("user", "Never noticed that option before.")) == []
    assert _labels(("user", "Never used that flag before.")) == []
    assert _labels(("user", "Never commit secrets to the repo.")) == ["user_profile:constraint"]
    assert _labels(("user", "Never embed API keys in Docker images.")) == ["user_profile:constraint"]
    assert _labels(("user", "Never exceed two retries per request.")) == ["user_profile:constraint"]

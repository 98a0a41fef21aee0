"""Regression tests for the offline extraction rules (issue 10): false positives and misses.

Sentences here are written for the tests, not copied from the labelled benchmark set.
"""

from __future__ import annotations

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.providers.llm.local_knowledge import extract_knowledge
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


@pytest.mark.parametrize(
    "text",
    [
        "I don't think that's right",
        "Do not forget to water the plants",
        "I'm a bit tired today",
        "Python is a great language, isn't it?",
        "我不觉得这样写是对的。",
        "别忘了给花浇水。",
        "我今天有点累。",
        "Go 是一门很好用的语言，对吧？",
        "Don't worry about the lint warnings for now.",
        "I can't remember where I put the config.",
        "You must be joking.",
        "I like that, thanks!",
        "Please don't add comments in this reply.",
        "这个 PR 必须今天合吗？",
    ],
)
def test_false_positives_yield_nothing(text: str) -> None:
    assert _labels(("user", text)) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'd rather keep the config in YAML than in TOML.", ["user_profile:preference"]),
        ("我宁愿多花点时间写文档，也不想以后没人看得懂。", ["user_profile:preference"]),
        ("We always tag releases from the main branch.", ["user_profile:habit"]),
        ("我们总是在周一上午做迭代规划。", ["user_profile:habit"]),
        ("We store blobs in S3, i.e. Amazon's object storage service.", ["definition"]),
        ("The MTTR (short for mean time to recovery) is tracked per quarter.", ["definition"]),
        ("向量召回是指用向量相似度从库里找出候选文档。", ["definition"]),
        ("ETL，也就是抽取、转换、加载，是数据仓库的基本流程。", ["definition"]),
        (
            "Rollback: 1. stop the canary 2. redeploy the last tag 3. check the error rate.",
            ["plan"],
        ),
        ("回滚步骤：1. 停掉灰度 2. 重新部署上一个版本 3. 观察错误率。", ["plan"]),
        ("我们的服务必须在内网环境下运行。", ["user_profile:constraint"]),
        ("From now on, never log request bodies.", ["user_profile:constraint"]),
    ],
)
def test_misses_are_found(text: str, expected: list[str]) -> None:
    assert _labels(("user", text)) == expected


def test_through_the_hub(tmp_path) -> None:
    principal = Principal.of("user:dana")
    with KnowledgeHub(tmp_path / "kh") as hub:
        saved = hub.extract(
            principal,
            [
                {"role": "user", "content": "I don't think that's right. I'd rather use Poetry."},
                {"role": "user", "content": "Python is a great language, isn't it?"},
            ],
        )
    assert [(k.types, k.tags["category"], k.content) for k in saved] == [
        (["user_profile"], "preference", "I'd rather use Poetry.")
    ]

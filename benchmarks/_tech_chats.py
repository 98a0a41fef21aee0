"""Synthetic long technical chats (English and Chinese) for ingest benchmarks.

Written from templates here (no benchmark text): a user plans and codes a small service
with an assistant over several sessions. Assistant replies are long and carry code blocks,
so the commit path meets what the issue-19 chats hold: long messages, code, both roles.
Deterministic for a given seed.
"""

from __future__ import annotations

import random
from typing import Any

_TOPICS_EN = [
    ("database", "PostgreSQL", "connection pool", "migration"),
    ("queue", "Redis streams", "consumer group", "retry policy"),
    ("auth", "OAuth2", "refresh token", "session cookie"),
    ("search", "tantivy", "BM25 ranking", "tokenizer"),
    ("deploy", "Kubernetes", "rolling update", "readiness probe"),
    ("cache", "memcached", "eviction", "TTL"),
    ("logging", "OpenTelemetry", "trace context", "sampling"),
    ("frontend", "React", "state hook", "bundle size"),
]
_TOPICS_ZH = [
    ("数据库", "PostgreSQL", "连接池", "迁移脚本"),
    ("消息队列", "Kafka", "消费者组", "重试策略"),
    ("鉴权", "JWT", "刷新令牌", "会话过期"),
    ("部署", "Docker", "滚动更新", "健康检查"),
    ("缓存", "Redis", "淘汰策略", "过期时间"),
    ("监控", "Prometheus", "告警规则", "采样间隔"),
]

_USER_EN = [
    "Let's work on the {0} layer today. We use {1}; I want the {2} to be configurable.",
    "I prefer small functions and type hints everywhere. Can you write the {3} for the {0} part?",
    "The {2} keeps timing out under load in staging. What should we change?",
    "Actually we decided to drop {1} for now and keep the {0} in process. Update the plan.",
    "Please remember that our team deploys on Fridays only after 14:00 and never touches {1} config then.",
    "Good, that works. Next, add tests for the {3} and explain the failure modes.",
    "Why did you pick that value for the {2}? My manager asked about the trade-off.",
]
_USER_ZH = [
    "今天我们来做{0}这一层，用的是{1}，{2}需要可以配置。",
    "我喜欢短小的函数，全部加类型标注。你能帮我写{0}部分的{3}吗？",
    "预发布环境压测时{2}一直超时，应该怎么改？",
    "我们决定先不用{1}了，{0}先放在进程内，请更新一下计划。",
    "请记住：我们团队周五下午两点以后才发布，而且那时不改{1}的配置。",
    "可以了。接下来给{3}补上测试，并说明可能的失败情况。",
]
_ASSIST_EN = (
    "Here is a plan for the {0} layer built on {1}. First, we keep the {2} size in the settings "
    "file so operators can change it without a release; the default is {n} because each worker "
    "holds one connection while it waits. Second, the {3} runs in its own transaction with a "
    "lock timeout, so a long query never blocks the deploy. Third, errors are mapped to one "
    "exception type and logged with the request id. I chose this because it keeps the hot path "
    "free of retries and makes the failure visible in the dashboard.\n\n```python\n"
    "def configure_{k}(settings: Settings) -> Pool:\n"
    "    \"\"\"Build the {2} from settings (size {n}, timeout {t} s).\"\"\"\n"
    "    pool = Pool(size=settings.{k}_size or {n}, timeout={t})\n"
    "    for attempt in range(3):\n"
    "        try:\n"
    "            pool.ping()\n"
    "            return pool\n"
    "        except ConnectionError as exc:\n"
    "            log.warning(\"{0} not ready (%s), retry %d\", exc, attempt)\n"
    "            time.sleep(0.5 * 2 ** attempt)\n"
    "    raise StartupError(\"{0} unreachable\")\n```\n\n"
    "Run the {3} with `make {k}-migrate` before the rollout. If the {2} is exhausted you will see "
    "`PoolTimeout` in the logs; raise the size or shorten transactions. We should also add a "
    "metric for wait time so the next incident is easier to read."
)
_ASSIST_ZH = (
    "下面是基于{1}的{0}方案。第一，{2}的大小写在配置文件里，运维不用发版就能调整，默认值是{n}，"
    "因为每个工作进程等待时会占用一个连接。第二，{3}在单独的事务里执行并设置锁超时，长查询不会阻塞发布。"
    "第三，所有错误映射成同一种异常，并带上请求编号写日志。这样热路径上没有重试，失败在监控面板上一眼可见。\n\n"
    "```python\n"
    "def setup_{k}(cfg):\n"
    "    pool = Pool(size=cfg.get(\"{k}_size\", {n}), timeout={t})\n"
    "    pool.ping()\n"
    "    return pool\n```\n\n"
    "上线前先执行 `make {k}-migrate`。如果日志里出现 `PoolTimeout`，说明{2}不够用，需要调大或者缩短事务。"
    "另外建议加一个等待时间的指标，方便以后排查问题。"
)


def tech_chat(index: int, sessions: int = 6, turns: int = 12, chinese: bool = False, seed: int = 0) -> list[list[dict[str, Any]]]:
    """One chat: ``sessions`` lists of messages (``turns`` user/assistant pairs each)."""
    rng = random.Random(seed * 1000 + index)
    topics = _TOPICS_ZH if chinese else _TOPICS_EN
    users = _USER_ZH if chinese else _USER_EN
    assistant = _ASSIST_ZH if chinese else _ASSIST_EN
    out: list[list[dict[str, Any]]] = []
    for s in range(sessions):
        msgs: list[dict[str, Any]] = []
        day = f"2026-0{1 + s % 9}-{10 + index % 18:02d}T10:00:00Z"
        for t in range(turns):
            topic = rng.choice(topics)
            n, tout = rng.choice((5, 8, 10, 16, 20, 32)), rng.choice((2, 5, 10, 30))
            key = f"c{index}s{s}t{t}"
            user = rng.choice(users).format(*topic)
            reply = assistant.format(*topic, n=n, t=tout, k=f"{topic[1].lower().split()[0]}_{t}")
            msgs.append({"role": "user", "content": user, "id": f"{key}u", "timestamp": day})
            msgs.append({"role": "assistant", "content": reply, "id": f"{key}a", "timestamp": day})
        out.append(msgs)
    return out


def tech_chats(count: int, sessions: int = 6, turns: int = 12, seed: int = 0) -> list[list[list[dict[str, Any]]]]:
    """``count`` chats, every third in Chinese."""
    return [tech_chat(i, sessions, turns, chinese=(i % 3 == 2), seed=seed) for i in range(count)]

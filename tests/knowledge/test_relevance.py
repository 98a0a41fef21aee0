"""Search relevance: the right item first, a threshold, quality only among relevant items.

A small realistic bilingual knowledge base (Chinese, English, mixed) of the kind an agent
team keeps, and queries that share words with their target item.
"""

from __future__ import annotations

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.knowledge.ranking import (
    Candidate,
    QueryMass,
    RelevanceModel,
    make_candidates,
    rank_hits,
)
from knowhub.providers.llm import StubLLMClient, parse_task_message
from knowhub.scope import Principal

ITEMS: dict[str, dict[str, object]] = {
    "slow_sql": {
        "task": "数据库查询很慢怎么排查",
        "content": "先打开 MySQL 慢查询日志，用 EXPLAIN 看执行计划，给 where 条件的列加索引。",
        "types": ["strategy"],
    },
    "redis_evict": {
        "task": "Redis 内存满了 key 被淘汰",
        "content": "检查 maxmemory-policy，设置为 allkeys-lru，并给缓存 key 加过期时间。",
        "types": ["strategy"],
    },
    "goroutine_leak": {
        "task": "Go 服务 goroutine 泄漏导致内存上涨",
        "content": "用 pprof 查看 goroutine profile，确认 channel 是否有接收方，给请求加 context 超时。",
        "types": ["strategy"],
    },
    "k8s_crashloop": {
        "task": "Pod 一直 CrashLoopBackOff",
        "content": "kubectl logs --previous 看上一次崩溃的日志，kubectl describe pod 看退出码和 OOMKilled。",
        "types": ["tool"],
    },
    "docker_prune": {
        "task": "Docker disk space full on the build server",
        "content": "Run docker system prune -af --volumes weekly; keep the build cache under 20 GB.",
        "types": ["tool"],
    },
    "git_undo": {
        "task": "Undo the last git commit but keep the changes",
        "content": "git reset --soft HEAD~1 keeps the changes staged; never reset a pushed branch.",
        "types": ["tool"],
    },
    "pg_backup": {
        "task": "Nightly PostgreSQL backup with pg_dump",
        "content": "pg_dump -Fc mydb > /backup/mydb.dump from cron at 02:00; test restores monthly.",
        "types": ["plan"],
    },
    "nginx_502": {
        "task": "nginx 返回 502 Bad Gateway",
        "content": "上游服务没启动或者端口不对；查看 nginx error.log 里的 upstream 报错。",
        "types": ["strategy"],
    },
    "python_venv": {
        "task": "Create a Python virtual environment",
        "content": "python -m venv .venv, then source .venv/bin/activate and pip install -r requirements.txt.",
        "types": ["tool"],
    },
    "ts_style": {
        "task": "用户编码风格偏好",
        "content": "用户偏好 TypeScript，缩进两个空格，不要分号。",
        "types": ["user_profile"],
    },
    "release_plan": {
        "task": "Release checklist for the mobile app",
        "content": "1. freeze the branch 2. run the e2e suite 3. bump the version 4. submit to the store.",
        "types": ["plan"],
    },
    "oauth_def": {
        "task": "Definition: OAuth refresh token",
        "content": "A refresh token is a long-lived credential used to obtain new access tokens.",
        "types": ["definition"],
    },
    "jwt_expire": {
        "task": "JWT 过期后前端如何自动续期",
        "content": "拦截 401 响应，用 refresh token 换新的 access token，再重放原请求。",
        "types": ["usecase"],
    },
    "cors": {
        "task": "浏览器报 CORS 跨域错误",
        "content": "服务端返回 Access-Control-Allow-Origin 头；带 cookie 时不能用通配符 *。",
        "types": ["strategy"],
    },
    "kafka_lag": {
        "task": "Kafka consumer lag keeps growing",
        "content": "Add partitions and consumers, and check for slow processing in the poll loop.",
        "types": ["strategy"],
    },
    "es_mapping": {
        "task": "Elasticsearch 字段类型映射错误",
        "content": "mapping 一旦创建不能修改，新建索引后用 reindex 迁移数据。",
        "types": ["strategy"],
    },
    "weekly_report": {
        "task": "写周报的模板",
        "content": "本周完成、下周计划、风险与求助，三段式，每段不超过五条。",
        "types": ["usecase"],
    },
    "ssh_key": {
        "task": "Set up SSH key login for a new server",
        "content": "ssh-keygen -t ed25519, then ssh-copy-id user@host and disable password login.",
        "types": ["tool"],
    },
    "react_rerender": {
        "task": "React 组件重复渲染性能差",
        "content": "用 React.memo 和 useMemo 缓存，避免在 render 里创建新对象和函数。",
        "types": ["strategy"],
    },
    "timezone": {
        "task": "Store timestamps in UTC",
        "content": "Save every timestamp in UTC in the database and convert to the user's time zone only for display.",
        "types": ["strategy"],
    },
}

#: (query, key of the item that must come first); every query shares words with it.
QUERIES = [
    ("数据库查询很慢", "slow_sql"),
    ("MySQL 慢查询怎么优化", "slow_sql"),
    ("redis 内存满了怎么办", "redis_evict"),
    ("goroutine 泄漏", "goroutine_leak"),
    ("pod CrashLoopBackOff 怎么查", "k8s_crashloop"),
    ("docker disk is full", "docker_prune"),
    ("how do I undo a git commit", "git_undo"),
    ("postgres backup", "pg_backup"),
    ("nginx 502", "nginx_502"),
    ("python virtual environment", "python_venv"),
    ("用户的编码风格", "ts_style"),
    ("mobile app release checklist", "release_plan"),
    ("what is a refresh token", "oauth_def"),
    ("JWT 过期 续期", "jwt_expire"),
    ("CORS 跨域", "cors"),
    ("kafka consumer lag", "kafka_lag"),
    ("elasticsearch mapping 修改", "es_mapping"),
    ("周报模板", "weekly_report"),
    ("ssh key login", "ssh_key"),
    ("React 重复渲染", "react_rerender"),
    ("timestamps time zone", "timezone"),
]

#: Queries about something no item covers.
NO_ANSWER = ["周末去哪里爬山", "sourdough bread baking tips", "best hiking trails near Seattle"]


@pytest.fixture(scope="module")
def bilingual(tmp_path_factory) -> tuple[KnowledgeHub, Principal, dict[str, str]]:
    hub = KnowledgeHub(tmp_path_factory.mktemp("kh"), secret_key=bytes(32))
    alice = Principal.of("user:alice", ["team:red"])
    ids: dict[str, str] = {}
    for key, body in ITEMS.items():
        # Unrelated items get the highest quality: it must never lift them above the target.
        score = 3 if key in {"slow_sql", "docker_prune"} else 5
        ids[key] = hub.save(alice, {**body, "scopes": ["team:red"], "score": score}).id
    yield hub, alice, ids
    hub.close()


@pytest.mark.parametrize(("query", "target"), QUERIES)
def test_the_right_item_comes_first(bilingual, query: str, target: str) -> None:
    hub, alice, ids = bilingual
    hits = hub.search(alice, query, top_k=5)
    assert hits, query
    assert hits[0].knowledge.id == ids[target], [h.knowledge.task for h in hits]


def test_slow_database_query_returns_no_unrelated_item(bilingual) -> None:
    hub, alice, ids = bilingual
    found = {h.knowledge.id for h in hub.search(alice, "数据库查询很慢", top_k=5)}
    for unrelated in ("redis_evict", "goroutine_leak", "k8s_crashloop"):
        assert ids[unrelated] not in found


@pytest.mark.parametrize("query", NO_ANSWER)
def test_a_query_with_no_relevant_item_returns_nothing(bilingual, query: str) -> None:
    hub, alice, _ids = bilingual
    assert hub.search(alice, query, top_k=5) == []


def test_fewer_than_top_k_when_few_items_are_relevant(bilingual) -> None:
    hub, alice, ids = bilingual
    hits = hub.search(alice, "kafka consumer lag", top_k=10)
    assert 1 <= len(hits) < 10
    assert hits[0].knowledge.id == ids["kafka_lag"]


# --------------------------------------------------------------------------- ranking units


def test_threshold_drops_weak_and_relatively_weak_candidates() -> None:
    model = RelevanceModel(vector_weight=1.0, min_lexical=0.25, min_cosine=0.3, relative_cutoff=0.3)
    picked = model.select(
        [
            Candidate("strong", lexical=0.9, cosine=0.4),
            Candidate("weak-lexical", lexical=0.1, cosine=0.1),  # under both floors
            Candidate("semantic", lexical=0.0, cosine=0.45),  # passes on cosine alone
            Candidate("far-behind", lexical=0.26, cosine=0.0),  # under 30% of the best
        ]
    )
    assert [kid for kid, _ in picked] == ["strong", "semantic"]
    assert model.select([Candidate("noise", lexical=0.2, cosine=0.15)]) == []
    # nothing matches lexically: meaning alone decides, from min_cosine_alone (issue 19 §4)
    assert [kid for kid, _ in model.select([Candidate("paraphrase", lexical=0.2, cosine=0.2)])] == ["paraphrase"]


def test_quality_orders_only_within_a_relevance_tier(tmp_path) -> None:
    hub = KnowledgeHub(tmp_path / "kh", secret_key=bytes(32))
    alice = Principal.of("user:alice", [])
    try:
        relevant = hub.save(
            alice,
            {
                "task": "rotate TLS certificates",
                "content": "renew TLS certificates with certbot",
                "types": ["tool"],
                "score": 3,
            },
        )
        popular = hub.save(
            alice,
            {
                "task": "rotate log files",
                "content": "logrotate weekly, keep four files",
                "types": ["tool"],
                "score": 5,
                "helpful": 40,
            },
        )
        hits = hub.search(alice, "rotate TLS certificates", top_k=5, min_score=0)
        assert hits[0].knowledge.id == relevant.id
        assert popular.quality_score > relevant.quality_score
    finally:
        hub.close()


def test_rank_hits_quality_breaks_ties_inside_a_tier_only(tmp_path) -> None:
    hub = KnowledgeHub(tmp_path / "kh", secret_key=bytes(32))
    alice = Principal.of("user:alice", [])
    try:
        a = hub.save(alice, {"task": "a", "content": "a", "types": ["tool"], "score": 1})
        b = hub.save(alice, {"task": "b", "content": "b", "types": ["tool"], "score": 5})
        c = hub.save(alice, {"task": "c", "content": "c", "types": ["tool"], "score": 5})
        items = {k.id: k for k in (a, b, c)}
        # a and b are in the top tier (b within 25% of a); c is far behind a.
        relevance = {a.id: 1.0, b.id: 0.8, c.id: 0.4}
        hits = rank_hits(alice, [a.id, b.id, c.id], items, relevance, top_k=3, min_score=0)
        assert [h.knowledge.id for h in hits] == [b.id, a.id, c.id]
    finally:
        hub.close()


def test_an_llm_router_sees_only_relevant_candidates_and_may_drop_all(tmp_path) -> None:
    stub = StubLLMClient()
    hub = KnowledgeHub(tmp_path / "kh", llm=stub, secret_key=bytes(32))
    alice = Principal.of("user:alice", [])
    try:
        hub.save(alice, {"task": "nginx reverse proxy", "content": "proxy_pass", "types": ["tool"]})
        hub.save(
            alice,
            {
                "task": "weekly report email",
                "content": "send it before the timeout on Friday",
                "types": ["usecase"],
            },
        )
        stub.push({"ids": []})
        assert hub.search(alice, "nginx reverse proxy upstream timeout") == []
        _task, payload = parse_task_message(stub.calls[-1][0])
        assert [i["task"] for i in payload["items"]] == ["nginx reverse proxy"]
    finally:
        hub.close()


def test_unseen_query_words_lower_coverage_not_the_lexical_share() -> None:
    mass = QueryMass.of(["kafka", "lag", "zzzunseen"], {"kafka": 2, "lag": 5}, n_docs=100)
    assert 0 < mass.known < mass.full
    (cand,) = make_candidates([("x", mass.known, None)], mass)
    assert cand.lexical == pytest.approx(1.0)
    assert cand.coverage == pytest.approx(mass.known / mass.full)
    assert cand.cosine == 0.0


def test_a_one_item_hub_finds_it_when_the_query_has_a_word_it_lacks(tmp_path) -> None:
    hub = KnowledgeHub(tmp_path / "kh", secret_key=bytes(32))
    alice = Principal.of("user:alice", [])
    try:
        item = hub.save(
            alice,
            {
                "task": "调研 KnowHub 的部署方式",
                "content": "用 knowhub serve 启动,配置 auth.keys 后才能监听公网地址",
                "types": ["plan"],
            },
        )
        assert [h.knowledge.id for h in hub.search(alice, "部署 KnowHub 服务")] == [item.id]
    finally:
        hub.close()

"""One scenario per engine, run against any "knowhub" (LocalKnowhub or a client).

Each scenario returns a list of ``(step, value)`` with values made JSON-like
(:func:`plain`), so the parity test can compare an in-process run with a served one after
:func:`normalize` has replaced what legitimately differs (generated ids, timestamps).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

from knowhub.errors import KnowhubError

Steps = list[tuple[str, Any]]

#: Keys whose values are times or durations: they differ between any two runs.
VOLATILE_KEYS = frozenset({
    "created_at", "updated_at", "timestamp", "committed_at", "at", "seconds", "duration_ms", "elapsed_ms",
    "time", "ts", "used_at", "recorded_at", "indexed_at", "last_write", "available_at", "lease_until",
    "claimed_at",
})
#: Keys whose values are generated ids (the same in both runs only up to renaming).
ID_KEYS = frozenset({"id", "change_id", "operation_id", "commit_id", "event_id", "knowledge_id", "info_id",
                     "keyword_id", "parent_id", "archive_id", "plan_id"})
_GENERATED = re.compile(r"knowledge-\d{8}-[0-9a-f]{16}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def plain(value: Any) -> Any:
    """Dataclasses (the engines' results), enums and tuples as JSON-like values."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return plain(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def recorder(steps: Steps) -> Callable[[str, Any], Any]:
    """``rec(step, value)``: keeps ``value`` as it is now (engine objects may be live:
    a KeywordNode's ``children`` follows the tree) and returns it."""

    def rec(step: str, value: Any) -> Any:
        steps.append((step, plain(value)))
        return value

    return rec


def error_of(call: Callable[[], Any]) -> dict[str, Any]:
    """The class of the error ``call`` raises. Its code and status are left out: the HTTP
    face refuses some bad input in its schema (422 ``validation_error``) before the engine
    would (400 ``invalid_input``); both are InvalidInputError."""
    try:
        result = call()
    except KnowhubError as exc:
        return {"raised": type(exc).__name__}
    return {"returned": plain(result)}


def normalize(steps: Steps) -> Steps:
    """Generated ids renamed in order of appearance, volatile values blanked."""
    names: dict[str, str] = {}

    def rename(text: str) -> str:
        def sub(match: re.Match[str]) -> str:
            return names.setdefault(match.group(0), f"<id{len(names)}>")

        return _GENERATED.sub(sub, text)

    def walk(value: Any, key: str = "") -> Any:
        if key in VOLATILE_KEYS and value not in (None, "", 0):
            return "<time>"
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            items = [walk(v, key) for v in value]
            # write results list the ids they touched sorted by id: random ids, random order
            return sorted(items) if key == "ids" else items
        if isinstance(value, str):
            if key in ID_KEYS and value not in names and not _GENERATED.fullmatch(value) and value != "root":
                names[value] = f"<id{len(names)}>"
            if value in names:
                return names[value]
            return rename(value)
        return value

    return [(step, walk(plain(value))) for step, value in steps]


def eventually(fetch: Callable[[], Any], ok: Callable[[Any], bool], timeout_s: float = 30.0) -> Any:
    """Poll until ``ok(fetch())``: search sees a commit once the index worker ran."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = fetch()
        if ok(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


# --------------------------------------------------------------------------- knowledge


def knowledge_scenario(kh: Any) -> Steps:
    k = kh.knowledge
    steps: Steps = []
    rec = recorder(steps)
    a = k.save({"task": "发布窗口 release window", "content": "团队只在周二发布 release only on tuesdays",
                "types": ["strategy"], "tags": {"team": "发布"}, "score": 4})
    b = k.save({"task": "部署回滚 rollback", "content": "回滚用 kubectl rollout undo", "types": ["tool"]})
    p = k.save({"task": "用户偏好", "content": "用户喜欢简洁的中文回答", "types": ["user_profile"]})
    rec("save", a)
    rec("save b", b)
    rec("save profile", p)
    rec("get", k.get(a.id))
    rec("update helpful", k.update(a.id, add_helpful_case={"task": "周二发布", "outcome": "ok"}))
    rec("update score", k.update(a.id, update_score=5))
    rec("batch", k.batch_update([{"knowledge_id": b.id, "is_helpful": False, "case": {"task": "x"}},
                                           {"knowledge_id": "knowledge-20000101-0000000000000000",
                                            "is_helpful": True}]))
    rec("list", k.list(limit=10))
    rec("list types", k.list(limit=10, types=["tool"]))
    rec("search", k.search("发布 release", top_k=3, min_score=0))
    rec("search types", k.search("rollback 回滚", types="tool", min_score=0))
    history = k.history(a.id)
    rec("history", history)
    rec("profile", k.user_profile(limit=5))
    rec("extract", k.extract([
        {"role": "user", "content": "我更喜欢用 pytest 写测试，请记住。I prefer pytest for tests."},
        {"role": "assistant", "content": "好的，以后用 pytest。"},
    ]))
    rec("slim plan", k.slim())
    rec("delete", k.delete(b.id))
    rec("get deleted", error_of(lambda: k.get(b.id)))
    rec("undo", k.undo(history[0]["change_id"]))
    rec("bad input", error_of(lambda: k.save({"task": "t", "content": "c", "types": ["nope"]})))
    # resources
    r = k.save_resource({"id": "code/发布/deploy", "title": "部署脚本", "body": "make deploy",
                         "secure_body": "token-秘密", "content_type": "code"})
    rec("save resource", r)
    rec("get resource", k.get_resource(r.id))
    rec("get secret", k.get_resource(r.id, include_secure=True))
    rec("list resources", k.list_resources(limit=5, content_type="code"))
    rec("update resource", k.update_resource(r.id, {"title": "部署"}))
    rec("resource history", k.resource_history(r.id))
    rec("delete resource", k.delete_resource(r.id))
    rec("get deleted resource", error_of(lambda: k.get_resource(r.id)))
    return steps


# --------------------------------------------------------------------------- context


def context_scenario(kh: Any) -> Steps:
    c = kh.context
    steps: Steps = []
    rec = recorder(steps)
    messages = [
        {"role": "user", "content": "I love hiking in the Alps every summer. 我也喜欢在杭州西湖骑车。"},
        {"role": "assistant", "content": "Noted: hiking in the Alps and cycling around West Lake."},
    ]
    first = c.commit_session(messages, options={"session_id": "s-parity", "session_time": "2026-03-05T12:00:00Z"})
    rec("commit", first)
    rec("commit again", c.commit_session(messages, options={"session_id": "s-parity",
                                                                        "session_time": "2026-03-05T12:00:00Z"}))
    memory = next(w.uri for w in first.write_results if "/memories/" in w.uri)
    found = eventually(lambda: c.search_memory("hiking Alps", top_k=5),
                       lambda r: any(b.uri == memory for b in r.blocks))
    rec("search", found)
    rec("search categories", eventually(lambda: c.search_memory("西湖 骑车", categories=["preferences"]),
                                                  lambda r: r.total > 0))
    rec("read L0", c.read_memory(memory, level="L0"))
    rec("read L2", c.read_memory(memory, level="L2", expand_relations=True, max_relations=5))
    rec("node", c.get_node(memory))
    space = memory.split("/memories/")[0]
    rec("children", c.list_children(space + "/memories", recursive=True, depth=2))
    rec("commits", c.list_commits(limit=5))
    rec("missing node", error_of(lambda: c.get_node(space + "/memories/events/nope")))
    rec("other user", error_of(lambda: c.get_node("ctx://default/users/someone-else/memories")))
    rec("bad level", error_of(lambda: c.read_memory(memory, level="L9")))
    return steps


# --------------------------------------------------------------------------- tree


def tree_scenario(kh: Any) -> Steps:
    t = kh.tree
    steps: Steps = []
    rec = recorder(steps)
    lang = t.create_keyword("编程语言", parent_id="root", aliases=["programming languages"], description="语言")
    py = t.create_keyword("Python", parent_id=lang.id, aliases=["py3"])
    rust = t.create_keyword("Rust", parent_id="root", llm_auto_place=False)
    rec("create", lang)
    rec("create child", py)
    rec("create rust", rust)
    info = t.create_info("Python 的 GIL 在 3.13 可以关闭", source="notes", keyword_ids=[py.id])
    rec("create info", info)
    rec("search", t.search("编程语言"))
    rec("search pinyin", t.search("bianchengyuyan"))
    rec("search alias", t.search("py3", use_agent=False))
    rec("search miss", t.search("完全不存在的词", use_agent=False))
    rec("get", t.get_keyword(py.id))
    rec("get missing", t.get_keyword("no-such-id"))
    rec("find", t.find_by_name("programming languages"))
    rec("path", t.get_path(py.id))
    rec("children", t.get_children(lang.id))
    rec("infos", t.get_infos_of_keyword(py.id, relation="PRIMARY", page=0, size=10))
    rec("keywords of info", t.get_keywords_of_info(info.id))
    rec("get info", t.get_info(info.id))
    rec("get info missing", t.get_info("no-such-info"))
    rec("update", t.update_keyword(py.id, {"description": "一种语言"}, version=py.version))
    rec("stale update", error_of(lambda: t.update_keyword(py.id, {"description": "x"}, version=1)))
    rec("add alias", t.add_alias(py.id, "蟒蛇"))
    rec("remove alias", t.remove_alias(py.id, "py3"))
    rec("move", t.move_keyword(rust.id, lang.id))
    rec("link", t.link_info(info.id, rust.id, relation="RELATED"))
    rec("unlink", t.unlink_info(info.id, rust.id))
    rec("update info", t.update_info(info.id, {"content": "Python 3.13: free-threaded build"}))
    rec("metrics", t.tree_metrics())
    merged = t.merge_keywords(rust.id, py.id)
    rec("merge", merged)
    rec("undo merge", t.undo(merged.operation_id))
    rec("history", t.history(limit=5))
    rec("delete info", t.delete_info(info.id))
    rec("delete", t.delete_keyword(rust.id))
    rec("cycle", error_of(lambda: t.move_keyword(lang.id, py.id)))
    rec("missing", error_of(lambda: t.get_path("no-such-id")))
    return steps


def differences(mine: Any, theirs: Any, path: str = "$") -> list[str]:
    """Paths where two normalized values differ (for readable assertion messages)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for key in sorted(set(mine) | set(theirs)):
            if key not in mine or key not in theirs:
                out.append(f"{path}.{key}: only on one side")
            else:
                out += differences(mine[key], theirs[key], f"{path}.{key}")
        return out
    if isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if mine == theirs else [f"{path}: {str(mine)[:160]!r} != {str(theirs)[:160]!r}"]

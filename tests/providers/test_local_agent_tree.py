"""Behaviour of the LocalAgent's KeywordTree handlers on realistic bilingual candidates."""

from __future__ import annotations

from typing import Any

import pytest

from knowhub.providers.llm import LocalAgent, build_task_messages

SCHEMA = {"type": "object"}


@pytest.fixture(scope="module")
def agent() -> LocalAgent:
    return LocalAgent()


def ask(agent: LocalAgent, task: str, payload: dict[str, Any]) -> dict[str, Any]:
    return agent.chat(build_task_messages(task, "Decide.", payload, SCHEMA), SCHEMA)


def cand(idx: int, path: str, child_count: int | None = 0, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"idx": idx, "name": path.split("/")[-1], "path": path, **extra}
    if child_count is not None:
        out["child_count"] = child_count
    return out


TECH = [
    cand(0, "技术", 2),
    cand(1, "技术/编程语言", 2),
    cand(2, "技术/编程语言/Python", 0),
    cand(3, "技术/编程语言/Go", 0),
    cand(4, "技术/数据库", 3),
    cand(5, "生活", 1),
    cand(6, "生活/烹饪", 0),
]


# -- pick_branch: search -----------------------------------------------------------------


def test_search_matches_python_for_a_chinese_english_query(agent: LocalAgent) -> None:
    decision = ask(agent, "pick_branch", {"intent": "search", "query": "python 教程", "path": [], "candidates": TECH})
    assert decision["action"] == "match"
    assert decision["node_id"] == 2
    assert "Python" in decision["reason"]


def test_search_jumps_into_an_unexpanded_branch_that_covers_part_of_the_query(agent: LocalAgent) -> None:
    candidates = [*TECH[:2], cand(2, "技术/编程语言/Python", 12), TECH[3]]
    decision = ask(agent, "pick_branch", {"query": "python 教程", "path": [], "candidates": candidates})
    assert decision["action"] == "jump"
    assert decision["node_id"] == 2
    assert decision["jump_depth"] == 3


def test_search_matches_expanded_node_when_its_children_do_not_fit(agent: LocalAgent) -> None:
    candidates = [
        cand(0, "Diseases of the circulatory system", 2),
        cand(1, "Diseases of the circulatory system/Hypertensive diseases", 2),
        cand(2, "Diseases of the circulatory system/Hypertensive diseases/Essential (primary) hypertension", 0),
        cand(3, "Diseases of the circulatory system/Hypertensive diseases/Hypertensive heart disease", 3),
        cand(4, "Diseases of the circulatory system/Ischemic heart diseases", 5),
        cand(5, "Endocrine, nutritional and metabolic diseases", 8),
    ]
    decision = ask(agent, "pick_branch", {"query": "essential hypertension", "candidates": candidates})
    assert decision == {**decision, "action": "match", "node_id": 2}
    heart = ask(agent, "pick_branch", {"query": "hypertensive heart disease with heart failure", "candidates": candidates})
    assert heart["action"] == "jump"  # the narrower code lives below idx 3
    assert heart["node_id"] == 3


def test_search_missing_when_nothing_is_related(agent: LocalAgent) -> None:
    decision = ask(agent, "pick_branch", {"query": "量子力学", "path": ["技术"], "candidates": TECH})
    assert decision["action"] == "missing"
    assert decision["suggest_name"] == "量子力学"


def test_search_ambiguous_for_equal_names_in_different_branches(agent: LocalAgent) -> None:
    candidates = [
        cand(0, "编程语言/Python", 0),
        cand(1, "动物/爬行动物/Python", 0),
        cand(2, "动物/哺乳动物", 4),
    ]
    decision = ask(agent, "pick_branch", {"query": "Python", "candidates": candidates})
    assert decision["action"] == "ambiguous"
    assert sorted(decision["candidate_ids"]) == [0, 1]


def test_search_multi_target_jump_on_near_tied_branches(agent: LocalAgent) -> None:
    candidates = [
        cand(0, "Diabetes mellitus/Type 1 diabetes mellitus", 20),
        cand(1, "Diabetes mellitus/Type 2 diabetes mellitus", 20),
        cand(2, "Malnutrition", 4),
    ]
    decision = ask(agent, "pick_branch", {"query": "diabetes mellitus with foot ulcer", "candidates": candidates})
    assert decision["action"] == "jump"
    assert sorted(decision["node_ids"]) == [0, 1]


def test_search_uses_aliases(agent: LocalAgent) -> None:
    candidates = [cand(0, "疾病/高血压", 0, aliases=["hypertension", "高血压病"]), cand(1, "疾病/糖尿病", 0)]
    decision = ask(agent, "pick_branch", {"query": "Hypertension", "candidates": candidates})
    assert (decision["action"], decision["node_id"]) == ("match", 0)


def test_unknown_child_count_is_treated_as_maybe_having_children(agent: LocalAgent) -> None:
    candidates = [cand(0, "技术/编程语言/Python", None), cand(1, "生活", None)]
    decision = ask(agent, "pick_branch", {"query": "python 装饰器 教程", "candidates": candidates})
    assert (decision["action"], decision["node_id"]) == ("jump", 0)


def test_bad_candidates_are_skipped_and_empty_input_is_missing(agent: LocalAgent) -> None:
    candidates = [{"idx": "x", "name": "bad"}, {"name": "no idx"}, cand(7, "技术/编程语言/Python", 0)]
    decision = ask(agent, "pick_branch", {"query": "python", "candidates": candidates})
    assert (decision["action"], decision["node_id"]) == ("match", 7)
    assert ask(agent, "pick_branch", {"query": "python", "candidates": []})["action"] == "missing"


def test_path_given_as_list_and_with_root(agent: LocalAgent) -> None:
    candidates = [
        {"idx": 0, "name": "Python", "path": ["root", "技术", "编程语言", "Python"], "child_count": 0},
        {"idx": 1, "name": "Go", "path": "root > 技术 > 编程语言 > Go", "child_count": 0},
    ]
    decision = ask(agent, "pick_branch", {"query": "golang 并发 go", "candidates": candidates})
    assert (decision["action"], decision["node_id"]) == ("match", 1)


# -- pick_branch: suggest_parent ---------------------------------------------------------


def test_suggest_parent_picks_the_contained_keyword(agent: LocalAgent) -> None:
    decision = ask(agent, "pick_branch", {"intent": "suggest_parent", "query": "Python 装饰器", "candidates": TECH})
    assert (decision["action"], decision["node_id"]) == ("match", 2)


def test_suggest_parent_uses_sibling_evidence(agent: LocalAgent) -> None:
    candidates = [
        cand(0, "Diabetes mellitus", 2),
        cand(1, "Diabetes mellitus/Type 1 diabetes mellitus", 0),
        cand(2, "Diabetes mellitus/Type 2 diabetes mellitus", 0),
        cand(3, "Malnutrition", 0),
    ]
    decision = ask(agent, "pick_branch", {"intent": "suggest_parent", "query": "Drug induced diabetes mellitus", "candidates": candidates})
    assert (decision["action"], decision["node_id"]) == ("match", 0)


def test_suggest_parent_missing_means_current_node(agent: LocalAgent) -> None:
    decision = ask(agent, "pick_branch", {"intent": "suggest_parent", "query": "Rust", "path": [], "candidates": TECH})
    assert decision["action"] == "missing"
    assert decision["suggest_name"] == "Rust"


# -- dedup_check -------------------------------------------------------------------------


def existing(idx: int, path: str, aliases: list[str] | None = None, description: str = "") -> dict[str, Any]:
    return {"idx": idx, "name": path.split("/")[-1], "path": path, "aliases": aliases or [], "description": description}


def test_dedup_same_name_same_parent_is_alias_of(agent: LocalAgent) -> None:
    decision = ask(agent, "dedup_check", {
        "name": "python", "aliases": [], "description": "", "parent_path": "技术/编程语言",
        "existing": [existing(4, "技术/编程语言/Python")],
    })
    assert decision["action"] == "alias_of"
    assert decision["target"] == 4


def test_dedup_same_name_bringing_new_aliases_is_merge(agent: LocalAgent) -> None:
    decision = ask(agent, "dedup_check", {
        "name": "Python", "aliases": ["py", "蟒蛇语言"], "description": "a programming language",
        "parent_path": ["技术", "编程语言"],
        "existing": [existing(4, "技术/编程语言/Python", ["python3"], "")],
    })
    assert (decision["action"], decision["target"]) == ("merge", 4)


def test_dedup_homonym_in_another_branch_is_create_new(agent: LocalAgent) -> None:
    decision = ask(agent, "dedup_check", {
        "name": "Python", "aliases": [], "description": "蟒蛇,一种大型无毒蛇",
        "parent_path": "动物/爬行动物",
        "existing": [existing(4, "技术/编程语言/Python", [], "一种解释型编程语言")],
    })
    assert decision["action"] == "create_new"
    assert decision["target"] is None
    assert "homonym" in decision["reason"]


def test_dedup_same_description_elsewhere_is_alias_of(agent: LocalAgent) -> None:
    decision = ask(agent, "dedup_check", {
        "name": "Hypertension", "description": "persistently raised arterial blood pressure",
        "parent_path": "Circulatory",
        "existing": [existing(9, "Cardiology/Hypertension", [], "persistently raised arterial blood pressure")],
    })
    assert (decision["action"], decision["target"]) == ("alias_of", 9)


def test_dedup_name_equal_to_existing_alias(agent: LocalAgent) -> None:
    decision = ask(agent, "dedup_check", {
        "name": "高血压病", "existing": [existing(1, "疾病/糖尿病"), existing(2, "疾病/高血压", ["高血压病", "HTN"])],
    })
    assert (decision["action"], decision["target"]) == ("alias_of", 2)


def test_dedup_without_collision_is_create_new(agent: LocalAgent) -> None:
    decision = ask(agent, "dedup_check", {"name": "Rust", "existing": [existing(1, "技术/编程语言/Go")]})
    assert decision == {**decision, "action": "create_new", "target": None}


# -- disambiguate ------------------------------------------------------------------------

PYTHONS = [
    {"idx": 0, "name": "Python", "path": "技术/编程语言/Python", "description": "一种解释型编程语言"},
    {"idx": 1, "name": "Python", "path": "动物/爬行动物/Python", "description": "蟒蛇,大型无毒蛇"},
]


def test_disambiguate_picks_by_path(agent: LocalAgent) -> None:
    assert ask(agent, "disambiguate", {"query": "python 编程", "candidates": PYTHONS}) == {
        **ask(agent, "disambiguate", {"query": "python 编程", "candidates": PYTHONS}),
        "action": "pick",
        "idx": 0,
    }
    snake = ask(agent, "disambiguate", {"query": "Python 蛇 爬行动物", "candidates": PYTHONS})
    assert (snake["action"], snake["idx"]) == ("pick", 1)


def test_disambiguate_uses_context(agent: LocalAgent) -> None:
    decision = ask(agent, "disambiguate", {"query": "python", "context": "动物园新来了一条蟒蛇", "candidates": PYTHONS})
    assert (decision["action"], decision["idx"]) == ("pick", 1)


def test_disambiguate_bare_name_is_ambiguous(agent: LocalAgent) -> None:
    decision = ask(agent, "disambiguate", {"query": "Python", "candidates": PYTHONS})
    assert decision["action"] == "ambiguous"
    assert decision["idx"] is None


# -- link_info ---------------------------------------------------------------------------


def test_link_info_relations(agent: LocalAgent) -> None:
    content = (
        "Python 装饰器入门。装饰器是 Python 中修改函数行为的语法,Python 的 functools 提供 wraps。"
        "其他语言也有类似机制,例如 Go 的中间件。来源:Rust 社区博客。"
    )
    candidates = [
        {"idx": 0, "name": "Python", "path": "技术/编程语言/Python", "matched": "Python"},
        {"idx": 1, "name": "装饰器", "path": "技术/编程语言/Python/装饰器", "matched": "装饰器"},
        {"idx": 2, "name": "Go", "path": "技术/编程语言/Go", "matched": "Go"},
        {"idx": 3, "name": "Rust", "path": "技术/编程语言/Rust", "matched": "Rust"},
        {"idx": 4, "name": "编程语言", "path": "技术/编程语言", "matched": "编程语言"},
    ]
    decision = ask(agent, "link_info", {"content": content, "candidates": candidates})
    relations = {link["idx"]: link["relation"] for link in decision["links"]}
    assert relations == {0: "PRIMARY", 1: "PRIMARY", 2: "EXAMPLE", 3: "SOURCE", 4: "RELATED"}


def test_link_info_latin_words_match_on_boundaries_and_primary_is_capped(agent: LocalAgent) -> None:
    content = "Notes. We use google search daily; go is a language. Go Go Go."
    candidates = [{"idx": i, "name": n, "matched": n} for i, n in enumerate(["go", "google", "search", "notes", "daily"])]
    decision = ask(agent, "link_info", {"content": content, "candidates": candidates})
    relations = {link["idx"]: link["relation"] for link in decision["links"]}
    assert relations[0] == "PRIMARY"  # most frequent (4 times, "google" does not count)
    assert relations[3] == "PRIMARY"  # in the title-like first sentence
    assert sum(1 for r in relations.values() if r == "PRIMARY") <= 3
    assert "go'×4" in decision["reason"]


def test_link_info_without_candidates(agent: LocalAgent) -> None:
    assert ask(agent, "link_info", {"content": "x", "candidates": []})["links"] == []


# -- reorganize --------------------------------------------------------------------------


def node(idx: int, name: str, parent: int | None, path: str, description: str = "", children: int = 0, infos: int = 0) -> dict[str, Any]:
    return {
        "idx": idx, "name": name, "parent_idx": parent, "path": path, "description": description,
        "child_count": children, "info_count": infos,
    }


def test_reorganize_merges_equal_siblings_moves_orphans_and_fills_descriptions(agent: LocalAgent) -> None:
    nodes = [
        node(0, "root", None, "", "root", 3),
        node(1, "技术", 0, "技术", "技术类知识", 1),
        node(2, "编程语言", 1, "技术/编程语言", "各种编程语言", 3),
        node(3, "Python", 2, "技术/编程语言/Python", "解释型语言", 0, infos=5),
        node(4, "python", 2, "技术/编程语言/python", "", 0, infos=1),
        node(5, "Go", 2, "技术/编程语言/Go", ""),
        node(6, "Python 装饰器", 0, "Python 装饰器", "函数包装"),
    ]
    plan = ask(agent, "reorganize", {"nodes": nodes})
    assert plan["merges"] == [{"src_idx": 4, "dst_idx": 3}]  # the one with more infos survives
    assert {"idx": 6, "new_parent_idx": 3} in plan["moves"]
    descriptions = {d["idx"]: d["description"] for d in plan["descriptions"]}
    assert descriptions == {5: "Go (under 技术 > 编程语言)"}  # 4 is merged away, root skipped
    assert set(plan) == {"moves", "merges", "new_parents", "descriptions", "reason"}


def test_reorganize_groups_crowded_children(agent: LocalAgent) -> None:
    nodes = [node(0, "root", None, "", "", 1), node(1, "Injuries", 0, "Injuries", "x", 60)]
    for i in range(60):
        name = f"Fracture of bone {i}" if i < 8 else f"Injury {i}"
        nodes.append(node(10 + i, name, 1, f"Injuries/{name}", "x"))
    nodes.append(node(100, "Sprain of ankle", 1, "Injuries/Sprain of ankle", "x"))
    nodes.append(node(101, "Sprain of knee", 1, "Injuries/Sprain of knee", "x"))
    plan = ask(agent, "reorganize", {"nodes": nodes})
    groups = {g["name"]: g for g in plan["new_parents"]}
    assert "Fracture" in groups
    assert groups["Fracture"]["parent_idx"] == 1
    assert sorted(groups["Fracture"]["child_idxs"]) == list(range(10, 18))
    assert "Sprain" not in groups  # only two: below the group minimum


def test_reorganize_empty(agent: LocalAgent) -> None:
    assert ask(agent, "reorganize", {"nodes": []})["merges"] == []


def test_engine_prompt_convention_parent_idx_and_inner_node_flags(agent: LocalAgent) -> None:
    # the tree engine lists a child by parent_idx when its parent is listed, omits the path
    # of top-level nodes and marks only inner nodes with has_children
    candidates = [
        {"idx": 0, "name": "技术", "has_children": True},
        {"idx": 1, "name": "编程语言", "parent_idx": 0, "has_children": True},
        {"idx": 2, "name": "Python", "parent_idx": 1},
        {"idx": 3, "name": "Go", "parent_idx": 1},
        {"idx": 4, "name": "装饰器", "path": "… > 编程语言 > Python"},
    ]
    decision = ask(agent, "pick_branch", {"query": "python 教程", "path": "", "candidates": candidates})
    assert (decision["action"], decision["node_id"]) == ("match", 2)  # a leaf: no jump
    jump = ask(agent, "pick_branch", {"query": "编程语言 python", "candidates": candidates[:2]})
    assert (jump["action"], jump["node_id"]) == ("jump", 1)


def test_placeholder_descriptions_count_as_empty(agent: LocalAgent) -> None:
    decision = ask(agent, "dedup_check", {
        "name": "Python", "aliases": [], "description": "(no description)",
        "existing": [existing(4, "技术/编程语言/Python", [], "(no description)")],
    })
    assert (decision["action"], decision["target"]) == ("alias_of", 4)
    plan = ask(agent, "reorganize", {"nodes": [
        node(0, "技术", None, "", "(no description)", 1),
        node(1, "编程语言", 0, "技术", "", 0),
    ]})
    assert {d["idx"]: d["description"] for d in plan["descriptions"]} == {
        0: "技术 (top level)",
        1: "编程语言 (under 技术)",
    }


def test_nos_query_prefers_the_unspecified_keyword(agent: LocalAgent) -> None:
    candidates = [
        cand(0, "Nontoxic goiter/Other specified nontoxic goiter", 0),
        cand(1, "Nontoxic goiter/Nontoxic goiter, unspecified", 0),
        cand(2, "Nontoxic goiter/Nontoxic single thyroid nodule", 0),
    ]
    decision = ask(agent, "pick_branch", {"query": "Nontoxic goiter NOS", "candidates": candidates})
    assert (decision["action"], decision["node_id"]) == ("match", 1)

"""conform: one field of the wrong type costs that field, never the whole answer."""

from __future__ import annotations

from knowhub.providers.llm.conform import conform

ITEM = {
    "type": "object",
    "properties": {
        "idx": {"type": "integer"},
        "relation": {"type": "string"},
        "score": {"type": "number"},
        "ok": {"type": "boolean"},
        "tags": {"type": "object"},
    },
}
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["match", "missing"]},
        "node_id": {"type": ["integer", "string", "null"]},
        "links": {"type": "array", "items": ITEM},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "reason": {"type": "string"},
    },
    "required": ["action"],
}


def test_valid_answers_pass_unchanged() -> None:
    answer = {"action": "match", "node_id": None, "links": [{"idx": 1, "relation": "RELATED"}],
              "ids": [1, 2], "reason": "因为", "extra": {"kept": True}}
    result = conform(answer, SCHEMA)
    assert result.value == answer and not result.repaired


def test_a_bad_field_is_dropped_and_the_rest_kept() -> None:
    result = conform({"action": "match", "links": "all of them", "reason": {"why": 1}, "node_id": 3}, SCHEMA)
    assert result.value == {"action": "match", "node_id": 3}
    assert len(result.repairs) == 2 and all("dropped" in r for r in result.repairs)


def test_bad_list_items_and_nested_fields_are_dropped_one_by_one() -> None:
    answer = {"action": "match", "ids": [0, "1", "x", True, 2.0, None],
              "links": [{"idx": "zero", "relation": "EXAMPLE"}, 3, {"idx": 2, "tags": [1], "ok": "true"}]}
    result = conform(answer, SCHEMA)
    assert result.value["ids"] == [0, 1, 2]
    assert result.value["links"] == [{"relation": "EXAMPLE"}, {"idx": 2, "ok": True}]


def test_unambiguous_repairs() -> None:
    answer = {"action": ["match"], "ids": 4, "reason": 7,
              "links": [{"idx": 1, "score": "0.5"}]}
    result = conform(answer, SCHEMA)
    assert result.value == {"action": "match", "ids": [4], "reason": "7",
                            "links": [{"idx": 1, "score": 0.5}]}
    assert result.repaired


def test_enums_are_left_to_the_engine() -> None:
    assert conform({"action": "MATCH"}, SCHEMA).value == {"action": "MATCH"}

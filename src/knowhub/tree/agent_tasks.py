"""Agent calls of the tree (contracts.md "Tree tasks") and their defined fallbacks.

Every decision goes through :meth:`AgentTasksMixin._ask`: build the task messages
(``build_task_messages``, so a real LLM and the LocalAgent read the same payload), look up
the agent-decision cache (key = hash(task, query, fingerprint of the (id, version) pairs
the agent would see)), call the client, classify failures as ``agent_timeout`` or
``agent_failure``, and return an io record that writes put into the change log
(``agent_io``). Callers own the fallback of each task.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from knowhub.errors import LLMTimeoutError
from knowhub.providers.llm import build_task_messages
from knowhub.tree.caches import decision_key, fingerprint
from knowhub.tree.core import TreeCore
from knowhub.tree.models import RelationType, choice

#: Aliases shown per keyword in a disambiguate view (descent candidates use the same).
CAND_ALIASES = 4

_log = logging.getLogger("knowhub.tree")

_IDX = {"type": ["integer", "string", "null"]}
#: Every decision explains itself: the reason lands in the change log's ``agent_io``.
_REASON = {"type": "string", "description": "one short sentence: why this decision"}
#: Appended to every task instruction, so a model fills ``reason`` even without a grammar.
REASON_NOTE = (
    " Always give `reason`: one short sentence, in the query's language, that tells an "
    "operator why you decided so."
)
#: The longest reason kept in an io record (the change log stays small).
REASON_CHARS = 500

PICK_BRANCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["jump", "match", "missing", "ambiguous"]},
        "node_id": _IDX,
        "node_ids": {"type": "array", "items": {"type": ["integer", "string"]}},
        "jump_depth": {"type": "integer"},
        "suggest_name": {"type": ["string", "null"]},
        "candidate_ids": {"type": "array", "items": {"type": ["integer", "string"]}},
        "reason": _REASON,
    },
    "required": ["action", "reason"],
}
DEDUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["alias_of", "merge", "create_new"]},
        "target": _IDX,
        "reason": _REASON,
    },
    "required": ["action", "reason"],
}
DISAMBIGUATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["pick", "ambiguous"]},
        "idx": _IDX,
        "reason": _REASON,
    },
    "required": ["action", "reason"],
}
LINK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "links": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"idx": {"type": "integer"}, "relation": {"type": "string", "enum": [r.value for r in RelationType]}},
                "required": ["idx", "relation"],
            },
        },
        "reason": _REASON,
    },
    "required": ["links", "reason"],
}
REORGANIZE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "moves": {"type": "array", "items": {"type": "object", "properties": {"idx": {"type": "integer"}, "new_parent_idx": {"type": "integer"}, "reason": _REASON}}},
        "merges": {"type": "array", "items": {"type": "object", "properties": {"src_idx": {"type": "integer"}, "dst_idx": {"type": "integer"}, "reason": _REASON}}},
        "new_parents": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "parent_idx": {"type": "integer"}, "child_idxs": {"type": "array", "items": {"type": "integer"}}, "reason": _REASON}}},
        "descriptions": {"type": "array", "items": {"type": "object", "properties": {"idx": {"type": "integer"}, "description": {"type": "string"}, "reason": _REASON}}},
        "reason": _REASON,
    },
    "required": ["moves", "merges", "new_parents", "descriptions", "reason"],
}

_INSTRUCTIONS = {
    "pick_branch": (
        "You navigate a keyword tree. Candidates are keywords with an integer idx, the path "
        "of their ancestors, and, when they have them, their aliases (other names of the same "
        "keyword, often in another language) and the start of their description. A query "
        "that names a keyword by an alias means that keyword. intent=search: find the keyword that means the query. "
        "intent=suggest_parent: find the keyword under which the query should be filed. "
        "Prefer 'match' (node_id=idx) when a candidate is the answer, at any depth; use 'jump' "
        "(node_id or node_ids) only to open a branch whose children are not listed; "
        "'ambiguous' (candidate_ids) when several fit equally; 'missing' (suggest_name) when "
        "none fits."
    ),
    "dedup_check": (
        "A new keyword collides with existing ones by name or alias. Decide whether it is "
        "an alias of one (alias_of, target=idx), the same concept whose description should "
        "be merged (merge, target=idx), or a different concept (create_new). parent_path, "
        "when given, is where the caller wants the new keyword: an existing keyword in "
        "another branch with nothing else in common is a homonym (create_new)."
    ),
    "disambiguate": (
        "Several keywords share the queried name. Pick the one the query means (pick, idx) "
        "or say it cannot be decided (ambiguous)."
    ),
    "link_info": (
        "Decide which candidate keywords a piece of information should be linked to and "
        "how: PRIMARY (it is about the keyword), RELATED, EXAMPLE (an example of it) or "
        "SOURCE (it is a source for it). Leave out candidates that are only mentioned."
    ),
    "reorganize": (
        "Review this part of a keyword tree and propose improvements: moves of misplaced "
        "nodes (idx, new_parent_idx), merges of duplicates (src_idx into dst_idx), new "
        "intermediate parents for crowded nodes (name, parent_idx, child_idxs) and "
        "descriptions for nodes without one. Propose nothing when the structure is fine."
    ),
}

INSTRUCTIONS = {task: text + REASON_NOTE for task, text in _INSTRUCTIONS.items()}

SCHEMAS = {
    "pick_branch": PICK_BRANCH_SCHEMA,
    "dedup_check": DEDUP_SCHEMA,
    "disambiguate": DISAMBIGUATE_SCHEMA,
    "link_info": LINK_SCHEMA,
    "reorganize": REORGANIZE_SCHEMA,
}


def _record_reason(io: dict[str, Any], answer: dict[str, Any]) -> None:
    """Put the answer's ``reason`` at the top of the io record (what an operator reads)."""
    reason = answer.get("reason")
    if isinstance(reason, str) and reason.strip():
        io["reason"] = reason.strip()[:REASON_CHARS]


class AgentTasksMixin(TreeCore):
    """The one place that talks to the LLM client."""

    def _ask(
        self,
        task: str,
        payload: dict[str, Any],
        *,
        cache_nodes: list[str] | None = None,
        cache_query: str | None = None,
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """Ask the agent; returns ``(answer or None, io record)``.

        ``cache_nodes`` enables the decision cache: the fingerprint covers those nodes'
        versions, so the cached answer is reused only for the same view of the tree.
        The io record has ``task``, ``payload``, ``answer``, ``error`` (``agent_timeout``
        or ``agent_failure: ...``), ``cached`` and ``ms``.
        """
        io: dict[str, Any] = {"task": task, "payload": payload, "answer": None, "error": None, "cached": False}
        key = None
        if cache_nodes is not None:
            nodes = self.state.nodes
            fp = fingerprint((i, nodes[i].version if i in nodes else 0) for i in cache_nodes)
            key = decision_key(task, cache_query if cache_query is not None else str(payload), fp)
            hit = self.caches.get_agent(key)
            if hit is not None:
                io["answer"] = hit
                io["cached"] = True
                io["ms"] = 0.0
                _record_reason(io, hit)
                return hit, io
        messages = build_task_messages(task, INSTRUCTIONS[task], payload, SCHEMAS[task])
        started = time.perf_counter()
        try:
            answer = self.llm.chat(messages, SCHEMAS[task])
        except (LLMTimeoutError, TimeoutError) as exc:
            io["error"] = "agent_timeout"
            io["detail"] = str(exc)[:300]
            answer = None
        except Exception as exc:  # any client failure has a defined fallback (seed 001 §6.2)
            io["error"] = "agent_failure"
            io["detail"] = f"{type(exc).__name__}: {exc}"[:300]
            answer = None
        io["ms"] = round((time.perf_counter() - started) * 1000, 3)
        if answer is not None and not isinstance(answer, dict):
            io["error"] = "agent_failure"
            io["detail"] = f"answer is {type(answer).__name__}, not an object"
            answer = None
        io["answer"] = answer
        if answer is not None:
            _record_reason(io, answer)
        if answer is not None and key is not None and cache_nodes is not None:
            io["cache_key"] = key
            io["_cache"] = (key, list(cache_nodes))
        return answer, io

    def _remember(self, io: dict[str, Any]) -> None:
        """Cache a decision the caller found valid (invalid answers are never cached)."""
        entry = io.pop("_cache", None)
        if entry is not None and io.get("answer") is not None:
            self.caches.put_agent(entry[0], io["answer"], entry[1])

    @staticmethod
    def _public_io(ios: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """io records without private keys, for the change log."""
        return [{k: v for k, v in io.items() if not k.startswith("_")} for io in ios]

    # -- dedup_check ---------------------------------------------------------------------

    def _dedup_check(
        self, name: str, aliases: list[str], description: str, existing: list[str], parent_id: str | None = None
    ) -> tuple[str, str | None, dict[str, Any]]:
        """``(action, target id, io)``; anything but a valid alias_of/merge is create_new.

        With an explicit ``parent_id`` the payload carries ``parent_path`` (names from the
        top down to that parent), so the agent can tell a homonym in another branch
        ("Python" under 编程 vs under 动物) from a duplicate.
        """
        view = [
            {
                "idx": i,
                "name": self.state.nodes[n].name,
                "aliases": self.state.nodes[n].aliases,
                "path": self._path_names(n),
                "description": self.state.nodes[n].description or "(no description)",
            }
            for i, n in enumerate(existing)
        ]
        payload: dict[str, Any] = {"name": name, "aliases": aliases, "description": description, "existing": view}
        if parent_id is not None:
            payload["parent_path"] = self._full_path(parent_id)
        answer, io = self._ask("dedup_check", payload)
        if not answer:
            return "create_new", None, io
        action = choice(answer.get("action"), ("alias_of", "merge", "create_new"))
        if action not in ("alias_of", "merge"):
            return "create_new", None, io
        target = self._resolve_index(answer.get("target"), existing)
        if target is None:
            io["error"] = io.get("error") or "invalid_target"
            return "create_new", None, io
        return str(action), target, io

    # -- disambiguate --------------------------------------------------------------------

    def _disambiguate(self, query: str, ids: list[str]) -> tuple[str | None, dict[str, Any]]:
        """The id the agent picks among same-name hits, or None (undecided)."""
        view = [
            {
                "idx": i,
                "name": self.state.nodes[n].name,
                "path": self._path_names(n),
                "aliases": self.state.nodes[n].aliases[:CAND_ALIASES],
                "description": self.state.nodes[n].description or "(no description)",
            }
            for i, n in enumerate(ids)
        ]
        answer, io = self._ask("disambiguate", {"query": query, "candidates": view}, cache_nodes=ids, cache_query=query)
        if not answer or choice(answer.get("action"), ("pick", "match", "ambiguous")) not in ("pick", "match"):
            return None, io
        raw = answer.get("idx", answer.get("node_id"))
        picked = self._resolve_index(raw, ids)
        if picked is not None:
            self._remember(io)
        return picked, io

    # -- link_info -----------------------------------------------------------------------

    def _link_decision(
        self, content: str, hits: dict[str, str]
    ) -> tuple[dict[str, RelationType], dict[str, Any]]:
        """Relations for auto_link.

        An answer with a ``links`` list is a decision, an empty one included (link
        nothing). Only a failed call, an answer without a list, or a non-empty list in which
        no entry names a shown candidate falls back to RELATED for every exact hit.
        """
        ids = list(hits)
        view = [
            {"idx": i, "name": self.state.nodes[n].name, "path": self._path_names(n), "matched": hits[n]}
            for i, n in enumerate(ids)
        ]
        answer, io = self._ask("link_info", {"content": content[:2000], "candidates": view})
        chosen: dict[str, RelationType] = {}
        links = answer.get("links") if answer else None
        decided = isinstance(links, list)
        if isinstance(links, list):
            for item in links:
                if not isinstance(item, dict):
                    continue
                target = self._resolve_index(item.get("idx", item.get("keyword_id")), ids)
                try:
                    relation = RelationType.parse(item.get("relation"), RelationType.RELATED)
                except ValueError:
                    continue
                if target is not None:
                    chosen[target] = relation
        if decided and not links:
            return chosen, io
        if not chosen:
            io["fallback"] = "related_for_exact_hits"
            chosen = dict.fromkeys(ids, RelationType.RELATED)
        return chosen, io

    # -- helpers -----------------------------------------------------------------------

    def _resolve_index(self, raw: Any, ids: list[str]) -> str | None:
        """A candidate named by its integer idx (or digit string) or by its node id."""
        if isinstance(raw, bool) or raw is None:
            return None
        if isinstance(raw, int):
            return ids[raw] if 0 <= raw < len(ids) else None
        if isinstance(raw, str):
            if raw in ids:
                return raw
            text = raw.strip()
            if text.isdigit():
                value = int(text)
                return ids[value] if 0 <= value < len(ids) else None
        return None


__all__ = ["SCHEMAS", "AgentTasksMixin"]

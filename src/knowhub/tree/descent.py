"""Agent descent of seed 001 §6 with query-aware candidates (a documented extension).

Each round the agent sees a flat list of at most ``max_candidates`` keywords
``{idx, name, path, aliases?, description?}`` where ``path`` is the `` > ``-joined ancestor names without root,
each cut to 20 characters, the nearest three ancestors only (``… > `` marks a cut). To keep
prompt tokens low, a candidate whose parent is listed too carries ``parent_idx`` instead of
``path``, a top-level candidate has no ``path``, and inner nodes carry
``has_children: true``. A keyword's aliases (at most ``CAND_ALIASES``, each cut to
``CAND_ALIAS_WIDTH`` characters) and the start of its description (``CAND_DESC_WIDTH``
characters) come with it, so the agent can match "Mapo tofu recipe" to 麻婆豆腐 whose
alias is "Mapo tofu"; empty ones are left out.
Candidates are, deduplicated and in this order:

1. MRU entry points (seed 001 §6.2 step 1), within the current scope;
2. lexical hits: nodes whose name or aliases share tokens with the query, ranked by a
   BM25 index over names + aliases, restricted to the subtree(s) the descent jumped into;
   room is kept for the first level below the start (up to half the budget) so that the
   right branch can always be opened;
3. breadth-first fill from the start ids (root's children, or the jump targets' children).

Seed 001's pure BFS cannot reach a random node of a 100k-node tree in two rounds; step 2
lets an agent match a deep node in round one while keeping the seed's shape (flat list,
integer idx, multi-level jumps, match at any depth). The agent may name a candidate by its
idx (int) or by its node id (string). Fallbacks of §6.2 step 5 return ``missing`` with
reason ``agent_failure`` / ``agent_timeout`` / ``invalid_jump`` / ``max_rounds``.
"""

from __future__ import annotations

import re
from typing import Any

from knowhub.errors import InvalidInputError
from knowhub.text import tokenize
from knowhub.tree.agent_tasks import CAND_ALIASES, AgentTasksMixin
from knowhub.tree.models import ROOT_ID, AgentDecision

#: Share of the candidate budget that MRU entries and lexical hits may take.
MRU_SHARE = 0.25
LEXICAL_SHARE = 0.6
#: Budget of BM25 postings one lexical search may score (see _lexical_query).
LEXICAL_POSTINGS = 30_000
_WORD_SPLIT = re.compile(r"[\s,;:/|()\[\]]+")
#: Each ancestor name in a candidate's path is cut to this many characters ...
PATH_WIDTH = 20
#: ... and only the nearest this-many ancestors are shown (``… > `` marks the cut).
PATH_DEPTH = 3
#: Width of each alias shown (at most ``CAND_ALIASES`` of them) and of the description:
#: what an agent needs to recognise a keyword, at a bounded cost per candidate.
CAND_ALIAS_WIDTH = 40
CAND_DESC_WIDTH = 80


def cut(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters (``…`` marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def candidate_extras(node: Any) -> dict[str, Any]:
    """The bounded ``aliases`` / ``description`` of a keyword as the agent sees them."""
    extra: dict[str, Any] = {}
    if node.aliases:
        extra["aliases"] = [cut(a, CAND_ALIAS_WIDTH) for a in node.aliases[:CAND_ALIASES]]
    if node.description and node.description.strip():
        extra["description"] = cut(node.description, CAND_DESC_WIDTH)
    return extra


class DescentMixin(AgentTasksMixin):
    """``_collect_candidates``, ``_agent_descend`` and ``_suggest_parent``."""

    def _collect_candidates(
        self,
        start_ids: list[str],
        query: str | None = None,
        scope: set[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Candidate view ``[{idx, id, name, path, aliases?, description?, has_children,
        parent_idx?}]``.

        ``id`` is for the engine only; :meth:`_agent_descend` strips it from the prompt
        (seed 001: no UUIDs in the prompt).
        """
        cap = self.max_candidates
        nodes = self.state.nodes
        chosen: dict[str, None] = {}

        def in_scope(node_id: str) -> bool:
            return scope is None or self.state.is_within(node_id, scope)

        mru_cap = max(1, int(cap * MRU_SHARE)) if len(self.mru) else 0
        for node_id in self.mru.snapshot():
            if len(chosen) >= mru_cap:
                break
            if node_id in nodes and node_id != ROOT_ID and (scope is None or (node_id not in scope and in_scope(node_id))):
                chosen[node_id] = None
        if query:
            lex_cap = max(1, int(cap * LEXICAL_SHARE))
            allowed = None
            if scope is not None:
                roots = set(scope)

                def allowed(doc_id: str) -> bool:
                    return doc_id not in roots and self.state.is_within(doc_id, roots)

            # keep room for the first level below the start (up to half the budget), so
            # that the agent can always open the right branch even when no hit is right
            first_level = sum(1 for s in start_ids if s in nodes and s not in chosen)
            room = cap - len(chosen) - min(first_level, cap // 2)
            limit = len(chosen) + max(0, min(lex_cap, room))
            for doc_id, _score in self.bm25.search(self._lexical_query(query), top_k=lex_cap, allowed=allowed):
                if len(chosen) >= limit:
                    break
                if doc_id in nodes:
                    chosen[doc_id] = None
        # BFS starts from the MRU entries (seed 001 §6.2 step 1: "priority entry points"),
        # reduced by _dedup_ancestors to independent subtree roots, then the start ids. The
        # start ids are listed before any MRU child, so the first level stays in view.
        mru_roots = self._dedup_ancestors([m for m in self.mru.snapshot() if m in nodes and m != ROOT_ID and in_scope(m)])
        queue = list(dict.fromkeys([*mru_roots, *(s for s in start_ids if s in nodes and s != ROOT_ID)]))
        i = 0
        while i < len(queue) and len(chosen) < cap:
            node_id = queue[i]
            i += 1
            chosen[node_id] = None
            for child in self.state.children.get(node_id, ()):
                if child in nodes:
                    queue.append(child)
        ids = list(chosen)[:cap]
        index = {node_id: idx for idx, node_id in enumerate(ids)}
        out = []
        for idx, node_id in enumerate(ids):
            node = nodes[node_id]
            cand: dict[str, Any] = {"idx": idx, "id": node_id, "name": node.name}
            if node.parent_id in index:
                # the parent is listed: its idx says where this node is, at a tenth of the tokens
                cand["parent_idx"] = index[node.parent_id]
            else:
                path = self._path_names(node_id, width=PATH_WIDTH, last=PATH_DEPTH)
                if path:
                    cand["path"] = path
            cand.update(candidate_extras(node))
            if self.state.has_children(node_id):
                cand["has_children"] = True
            out.append(cand)
        return out

    def _dedup_ancestors(self, ids: list[str]) -> list[str]:
        """``ids`` without those lying under another listed id (seed 001 §6.2), order kept:
        what remains are independent subtree roots, so BFS visits no subtree twice."""
        listed = dict.fromkeys(ids)
        return [i for i in listed if not any(a in listed for a in self.state.ancestors(i))]

    def _lexical_query(self, query: str) -> str:
        """The query, without its most common words when they would make BM25 slow.

        BM25 scores every document that shares a query token, so words like "disease" or
        "other" in a 100k-keyword tree cost tens of thousands of scored documents while
        adding little to the ranking (their idf is low). Words are taken from the rarest
        (judged by the document frequency of their rarest token) while the postings they
        bring stay within ``LEXICAL_POSTINGS``; the rarest word is always kept.
        """
        words = [w for w in _WORD_SPLIT.split(query) if w]
        if len(words) < 2:
            return query
        index = self.bm25
        scored = []
        for pos, word in enumerate(words):
            toks = tokenize(word)
            if toks:
                scored.append((min(index.document_frequency(t) for t in toks), pos, word))
        if not scored or sum(df for df, _, _ in scored) <= LEXICAL_POSTINGS:
            return query
        scored.sort()
        kept: list[tuple[int, str]] = []
        total = 0
        for df, pos, word in scored:
            if kept and total + df > LEXICAL_POSTINGS:
                continue
            kept.append((pos, word))
            total += df
        return " ".join(word for _, word in sorted(kept))

    def _resolve_target(self, raw: Any, by_idx: dict[int, str]) -> str | None:
        """Map a decision target (idx int, digit string or node id) to a shown candidate.

        Only the candidates of this round count: an id the agent was not shown (a guess,
        or a node from an earlier prompt) is no decision about this view.
        """
        if isinstance(raw, bool) or raw is None:
            return None
        if isinstance(raw, int):
            return by_idx.get(raw)
        if isinstance(raw, str):
            if raw in by_idx.values():
                return raw
            text = raw.strip()
            if text.isdigit():
                return by_idx.get(int(text))
        return None

    def _lca(self, ids: list[str]) -> str:
        paths = [[*self.state.ancestors(i), i] for i in ids]
        common = ROOT_ID
        for level in zip(*paths, strict=False):
            if all(x == level[0] for x in level):
                common = level[0]
            else:
                break
        return common

    def _agent_descend(self, query: str, intent: str = "search") -> dict[str, Any]:
        """Seed 001 §6.1: ``{outcome, node_id, path, candidates, suggested_parent_id,
        suggested_name, reason, rounds, agent_io, last_candidates}``."""
        if intent not in ("search", "suggest_parent"):
            raise InvalidInputError(f"unknown intent {intent!r}", intent=intent)
        current = ROOT_ID
        scope: set[str] | None = None
        start_ids = list(self.state.children.get(ROOT_ID, ()))
        ios: list[dict[str, Any]] = []
        last: list[str] = []

        def result(outcome: str, reason: str, **kw: Any) -> dict[str, Any]:
            base: dict[str, Any] = {
                "outcome": outcome,
                "node_id": None,
                "path": [],
                "candidates": [],
                "suggested_parent_id": None,
                "suggested_name": None,
                "reason": reason,
                "rounds": len(ios),
                "agent_io": self._public_io(ios),
                "last_candidates": last,
            }
            base.update(kw)
            return base

        def missing(reason: str, name: str | None = None) -> dict[str, Any]:
            return result("missing", reason, suggested_parent_id=current, suggested_name=name or query)

        for _round in range(self.descend_max_rounds):
            cands = self._collect_candidates(start_ids, query, scope)
            if not cands:
                return missing("no_candidates")
            by_idx = {c["idx"]: c["id"] for c in cands}
            last = [c["id"] for c in cands]
            prompt_cands = [{k: v for k, v in c.items() if k != "id"} for c in cands]
            path_names = [n for n in self._full_path(current).split(" > ") if n] if current != ROOT_ID else []
            payload = {"intent": intent, "query": query, "path": path_names, "candidates": prompt_cands}
            answer, io = self._ask(
                "pick_branch", payload, cache_nodes=[current, *last], cache_query=f"{intent}\x00{query}\x00{current}"
            )
            ios.append(io)
            if answer is None:
                return missing(io.get("error") or "agent_failure")
            try:
                decision = AgentDecision.from_dict(answer)
            except (InvalidInputError, TypeError, ValueError) as exc:
                io["error"] = f"agent_failure: {exc}"
                return missing("agent_failure")
            raw_targets = decision.targets
            targets = [self._resolve_target(t, by_idx) for t in raw_targets]
            if decision.action in ("jump", "match") and any(t is None for t in targets):
                if decision.action == "jump":
                    return missing("invalid_jump")
                io["error"] = "invalid_match_target"
                return missing("invalid_jump")
            valid = list(dict.fromkeys(t for t in targets if t is not None))
            if decision.action in ("jump", "match"):
                self._remember(io)
            if decision.action == "match":
                if not valid:
                    return missing(decision.reason or "match without target", decision.suggest_name)
                if len(valid) == 1:
                    node_id = valid[0]
                    return result("matched", decision.reason, node_id=node_id, path=[*self.state.ancestors(node_id), node_id])
                return result("ambiguous", decision.reason, candidates=valid)
            if decision.action == "jump":
                if not valid:
                    return missing(decision.reason or "jump without target", decision.suggest_name)
                if len(valid) == 1:
                    node_id = valid[0]
                    if not self.state.has_children(node_id):
                        return result("matched", decision.reason or "jumped to a leaf", node_id=node_id, path=[*self.state.ancestors(node_id), node_id])
                    current = node_id
                    scope = {node_id}
                    start_ids = list(self.state.children.get(node_id, ()))
                    continue
                if not any(self.state.has_children(t) for t in valid):
                    return result("ambiguous", decision.reason or "all jump targets are leaves", candidates=valid)
                current = self._lca(valid)
                scope = set(valid)
                start_ids = [c for t in valid for c in self.state.children.get(t, ())]
                continue
            if decision.action == "ambiguous":
                picked = [self._resolve_target(t, by_idx) for t in decision.candidate_ids]
                ids = list(dict.fromkeys(p for p in picked if p is not None))
                self._remember(io)
                return result("ambiguous", decision.reason, candidates=ids or last)
            self._remember(io)
            return missing(decision.reason or "missing", decision.suggest_name)
        return missing("max_rounds")

    def _suggest_parent(self, name: str) -> str:
        """Seed 001 §6.4: the id of the parent the agent suggests (root when unsure)."""
        return self._suggest_parent_io(name)[0]

    def _suggest_parent_io(self, name: str) -> tuple[str, dict[str, Any]]:
        """:meth:`_suggest_parent` plus the descent record (for ``agent_io``)."""
        desc = self._agent_descend(name, "suggest_parent")
        if desc["outcome"] == "matched" and desc["node_id"] in self.state.nodes:
            for node_id in desc["path"]:  # seed 001 §6.2: a match touches its path in the MRU
                if node_id != ROOT_ID:
                    self.mru.touch(node_id)
            return desc["node_id"], desc
        if desc["outcome"] == "missing":
            parent = desc.get("suggested_parent_id") or ROOT_ID
            return (parent if parent in self.state.nodes else ROOT_ID), desc
        return ROOT_ID, desc


__all__ = ["DescentMixin"]

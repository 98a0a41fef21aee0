"""LocalAgent handlers for the KeywordTree decisions (seed 000 §4.3, seed 001 §6).

These are lexical heuristics, not a language model: they find keywords whose names share
words or characters with the query (weighted by rarity among the candidates), and they
know nothing about synonyms that share no text ("high blood pressure" vs "hypertension")
unless the LocalAgent has an embedder that does. Every answer says why in ``reason``.

Payload fields read (all optional unless marked *required*; unknown fields are ignored):

``pick_branch``
    ``intent`` (``search`` | ``suggest_parent``, default ``search``), ``query`` *required*,
    ``path`` (names so far: list or ``/``-joined string), ``candidates`` *required*: list of
    ``{idx, name, path, aliases?, description?, parent_idx?, child_count? | has_children? |
    is_leaf?}``. A candidate counts as *expanded* when another candidate lies under it
    (by ``parent_idx`` or by path prefix); its children were then on offer already.
``dedup_check``
    ``name`` *required*, ``aliases``, ``description``, ``parent_path`` (or ``path``: where
    the new keyword would go), ``existing``: list of ``{idx, name, aliases, path,
    description}``.
``disambiguate``
    ``query`` *required*, ``context`` (extra text around the query), ``candidates``: list
    of ``{idx, name, path, description, aliases?}``.
``link_info`` and ``reorganize``
    see :mod:`knowhub.providers.llm.local_tree_ops`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from knowhub.providers.llm.local_scoring import (
    NO_MATCH,
    MatchScore,
    TokenWeights,
    candidate_path,
    clean_description,
    name_match,
    path_text,
)
from knowhub.providers.llm.local_tree_ops import link_info, reorganize
from knowhub.text import normalize, similarity, tokenize

if TYPE_CHECKING:
    from knowhub.providers.llm.local import LocalAgent

__all__ = ["HANDLERS", "dedup_check", "disambiguate", "pick_branch"]

#: Name score at or above which a candidate is taken as the answer.
MATCH_THRESHOLD = 0.55
#: Below this, a candidate is not worth descending into.
JUMP_FLOOR = 0.3
#: A leaf (or expanded node) at or above this, with nothing better, is still the answer.
LEAF_MATCH = 0.45
#: Candidates within this total score of the best count as a tie.
TIE_MARGIN = 0.02
#: Weights of the tie-breaking signals added to the name score.
CONTEXT_WEIGHT = 0.15
SEMANTIC_WEIGHT = 0.1
#: Bonus for an "unspecified" keyword when the query says NOS/unspecified (taxonomies
#: such as ICD name the catch-all child so).
GENERIC_BONUS = 0.04
MAX_MULTI = 3
MAX_AMBIGUOUS = 5


@dataclass
class _Candidate:
    idx: int
    name: str
    path: list[str]
    aliases: list[str]
    description: str
    parent_idx: int | None
    has_children: bool | None
    match: MatchScore = NO_MATCH
    context: float = 0.0
    total: float = 0.0
    children: list[int] = field(default_factory=list)

    @property
    def may_have_children(self) -> bool:
        return self.has_children is not False


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if isinstance(v, str) and v.strip()]
    return []


def _has_children(raw: dict[str, Any]) -> bool | None:
    if isinstance(raw.get("child_count"), int) and not isinstance(raw.get("child_count"), bool):
        return raw["child_count"] > 0
    if isinstance(raw.get("has_children"), bool):
        return bool(raw["has_children"])
    for key in ("is_leaf", "leaf"):
        if isinstance(raw.get(key), bool):
            return not raw[key]
    return None


_CHILD_KEYS = ("child_count", "has_children", "is_leaf", "leaf")

def _parse_candidates(raw_list: Any) -> list[_Candidate]:
    """Valid candidates of a payload, in input order; entries without idx/name are skipped.

    A candidate given by ``parent_idx`` instead of ``path`` gets its parent's path plus its
    own name. When any candidate carries child information, the payload follows the
    convention "only inner nodes say so", and a candidate without it is a leaf.
    """
    out: list[_Candidate] = []
    seen: set[int] = set()
    rows = [raw for raw in (raw_list if isinstance(raw_list, list) else []) if isinstance(raw, dict)]
    child_info = any(any(key in raw for key in _CHILD_KEYS) for raw in rows)
    for raw in rows:
        idx = _as_int(raw.get("idx"))
        name = raw.get("name")
        if idx is None or idx in seen or not isinstance(name, str) or not name.strip():
            continue
        seen.add(idx)
        has_children = _has_children(raw)
        if has_children is None and child_info:
            has_children = False
        out.append(
            _Candidate(
                idx=idx,
                name=name,
                path=candidate_path(raw),
                aliases=_str_list(raw.get("aliases")),
                description=clean_description(raw.get("description")),
                parent_idx=_as_int(raw.get("parent_idx")),
                has_children=has_children,
            )
        )
    _resolve_paths(out)
    return out


def _resolve_paths(cands: list[_Candidate]) -> None:
    """Prefix the path of every candidate that names its parent by ``parent_idx``."""
    by_idx = {c.idx: c for c in cands}
    done: set[int] = set()

    def resolve(c: _Candidate, trail: set[int]) -> list[str]:
        if c.idx in done:
            return c.path
        parent = by_idx.get(c.parent_idx) if c.parent_idx is not None else None
        if parent is not None and parent.idx not in trail:
            c.path = [*resolve(parent, trail | {c.idx}), c.name]
        done.add(c.idx)
        return c.path

    for c in cands:
        resolve(c, set())


def _link_tree(cands: list[_Candidate]) -> tuple[set[int], dict[int, int]]:
    """Which candidates are expanded (have a descendant on offer), and each one's parent."""
    by_idx = {c.idx: c for c in cands}
    by_path: dict[tuple[str, ...], int] = {}
    for c in cands:
        by_path.setdefault(tuple(normalize(p) for p in c.path), c.idx)
    expanded: set[int] = set()
    parent_of: dict[int, int] = {}
    for c in cands:
        key = tuple(normalize(p) for p in c.path)
        parent = c.parent_idx if c.parent_idx in by_idx else by_path.get(key[:-1])
        if parent is not None and parent != c.idx:
            parent_of[c.idx] = parent
            by_idx[parent].children.append(c.idx)
        for cut in range(1, len(key)):
            ancestor = by_path.get(key[:cut])
            if ancestor is not None and ancestor != c.idx:
                expanded.add(ancestor)
    # parent_idx chains cover trees whose paths are not given
    for c in cands:
        seen: set[int] = set()
        parent = parent_of.get(c.idx)
        while parent is not None and parent not in seen:
            expanded.add(parent)
            seen.add(parent)
            parent = parent_of.get(parent)
    return expanded, parent_of


def _score(query: str, cands: list[_Candidate], agent: LocalAgent | None) -> None:
    """Fill match/context/total of every candidate."""
    weights = TokenWeights(tokenize(" ".join([c.name, *c.aliases])) for c in cands)
    generic_tokens = _generic_tokens()
    generic_query = bool(generic_tokens & set(tokenize(query)))
    semantic: list[float] | None = None
    if agent is not None:
        texts = [" / ".join(c.path) + (f": {c.description}" if c.description else "") for c in cands]
        semantic = agent.semantic_scores(query, texts)
    for pos, c in enumerate(cands):
        best = name_match(query, c.name, weights)
        for alias in c.aliases:
            alt = name_match(query, alias, weights)
            if alt.score * 0.98 > best.score:
                best = MatchScore(alt.score * 0.98, alt.query_cov, alt.name_cov, alt.exact)
        c.match = best
        context = 0.0
        for back, segment in enumerate(reversed(c.path[:-1])):
            context = max(context, similarity(query, segment) * max(0.4, 1.0 - 0.15 * back))
        if c.description:
            context = max(context, 0.8 * similarity(query, c.description))
        c.context = context
        c.total = best.score + CONTEXT_WEIGHT * context
        if generic_query and generic_tokens & set(tokenize(c.name)):
            c.total += GENERIC_BONUS  # "X NOS" means the unspecified X
        if semantic is not None:
            c.total += SEMANTIC_WEIGHT * semantic[pos]


def _generic_tokens() -> set[str]:
    return {t for word in ("unspecified", "NOS", "未特指", "未指明") for t in tokenize(word) if len(t) > 1}


def _jump_depth(c: _Candidate, current: list[str]) -> int:
    return max(1, len(c.path) - len(current))


def _describe(c: _Candidate) -> str:
    return f"'{c.name}' (idx {c.idx}) name={c.match.score:.2f} ctx={c.context:.2f}"


def _missing(query: str, reason: str) -> dict[str, Any]:
    return {"action": "missing", "suggest_name": query, "reason": reason}


def pick_branch(payload: dict[str, Any], agent: LocalAgent | None = None) -> dict[str, Any]:
    """Seed 001 §6 AgentDecision for one round of the descent.

    ``search``: match the best candidate whose name matches the query well; jump into an
    unexpanded branch whose name covers part of the query (the rest may be a child);
    ``ambiguous`` on near-ties; ``missing`` when nothing clears the floor.
    ``suggest_parent``: pick the node the new keyword should hang under, from containment
    ("Python" for "Python 装饰器") and sibling evidence (the parent of a similar keyword).
    """
    query = str(payload.get("query") or "").strip()
    cands = _parse_candidates(payload.get("candidates"))
    if not query:
        return {"action": "missing", "reason": "empty query"}
    if not cands:
        return _missing(query, "no candidates")
    current = path_text(payload.get("path"))
    expanded, parent_of = _link_tree(cands)
    _score(query, cands, agent)
    if str(payload.get("intent") or "search") == "suggest_parent":
        return _suggest_parent(query, cands, expanded, parent_of, current)
    return _search(query, cands, expanded, current)


def _search(
    query: str, cands: list[_Candidate], expanded: set[int], current: list[str]
) -> dict[str, Any]:
    ranked = sorted(cands, key=lambda c: (-c.total, -len(c.path), c.idx))
    best = ranked[0]
    runner = f"; next {_describe(ranked[1])}" if len(ranked) > 1 else ""
    if best.match.score < JUMP_FLOOR:
        return _missing(query, f"no candidate shares enough with the query: best {_describe(best)}")

    def openable(c: _Candidate) -> bool:
        return c.may_have_children and c.idx not in expanded

    ties = [
        c
        for c in ranked[1:]
        if (best.total - c.total <= TIE_MARGIN and c.match.score >= JUMP_FLOOR)
        or (c.match.exact and best.match.exact)
    ]
    if best.match.score >= MATCH_THRESHOLD:
        if openable(best) and not best.match.query_explained:
            return {
                "action": "jump",
                "node_id": best.idx,
                "jump_depth": _jump_depth(best, current),
                "reason": f"branch {_describe(best)} covers part of the query; open it{runner}",
            }
        finals = [c for c in ties if c.match.score >= MATCH_THRESHOLD]
        if finals:
            group = [best, *finals][:MAX_AMBIGUOUS]
            return {
                "action": "ambiguous",
                "candidate_ids": [c.idx for c in group],
                "reason": "near-tie: " + ", ".join(_describe(c) for c in group),
            }
        return {"action": "match", "node_id": best.idx, "reason": f"best {_describe(best)}{runner}"}
    if openable(best):
        group = [best, *[c for c in ties if openable(c)]][:MAX_MULTI]
        if len(group) > 1:
            return {
                "action": "jump",
                "node_ids": [c.idx for c in group],
                "jump_depth": min(_jump_depth(c, current) for c in group),
                "reason": "open near-tied branches: " + ", ".join(_describe(c) for c in group),
            }
        return {
            "action": "jump",
            "node_id": best.idx,
            "jump_depth": _jump_depth(best, current),
            "reason": f"partial match, open branch {_describe(best)}{runner}",
        }
    if best.match.score >= LEAF_MATCH:
        return {"action": "match", "node_id": best.idx, "reason": f"closest {_describe(best)}{runner}"}
    return _missing(query, f"best {_describe(best)} is too weak and has nothing below it{runner}")


def _suggest_parent(
    query: str,
    cands: list[_Candidate],
    expanded: set[int],
    parent_of: dict[int, int],
    current: list[str],
) -> dict[str, Any]:
    nq = normalize(query)
    parent_score: dict[int, float] = {}
    why: dict[int, str] = {}
    here_score = 0.0  # evidence for the current node (the siblings-to-be are top-level here)

    def offer(idx: int, score: float, reason: str) -> None:
        if score > parent_score.get(idx, 0.0):
            parent_score[idx] = score
            why[idx] = reason

    for c in cands:
        same = normalize(c.name) == nq or c.match.exact
        ms = c.match
        if not same:
            if ms.name_cov >= 0.999 and ms.score >= JUMP_FLOOR:
                offer(c.idx, ms.score, f"'{c.name}' is contained in the new name")
            offer(c.idx, 0.6 * ms.score + 0.2 * c.context, f"'{c.name}' is related")
        if same or ms.score >= LEAF_MATCH:
            sibling = 0.95 if same else 0.85 * ms.score
            reason = f"similar keyword '{c.name}' lives there"
            parent = parent_of.get(c.idx)
            if parent is not None:
                offer(parent, sibling, reason)
            elif sibling > here_score:
                here_score = sibling
    if not parent_score and here_score == 0.0:
        return _missing(query, "no related keyword among the candidates")
    best_idx = max(parent_score, key=lambda i: (parent_score[i], -i)) if parent_score else None
    best_value = parent_score.get(best_idx, 0.0) if best_idx is not None else 0.0
    if best_idx is None or here_score >= best_value or best_value < JUMP_FLOOR:
        where = "/".join(current) or "root"
        return _missing(query, f"best place is the current node '{where}' (score {here_score:.2f})")
    best = next(c for c in cands if c.idx == best_idx)
    contained = best.match.name_cov >= 0.999
    if contained and best.may_have_children and best.idx not in expanded:
        return {
            "action": "jump",
            "node_id": best.idx,
            "jump_depth": _jump_depth(best, current),
            "reason": f"{why[best.idx]} ({best_value:.2f}); look for a narrower parent inside",
        }
    return {"action": "match", "node_id": best.idx, "reason": f"{why[best.idx]} ({best_value:.2f})"}


# -- dedup_check -------------------------------------------------------------------------

#: Descriptions at least this similar describe the same concept.
SAME_DESCRIPTION = 0.5


def _parent_key(path: list[str]) -> tuple[str, ...]:
    return tuple(normalize(p) for p in path[:-1])


def dedup_check(payload: dict[str, Any], agent: LocalAgent | None = None) -> dict[str, Any]:
    """Decide whether a new keyword duplicates an existing one (seed 000 §5.2 step 2).

    Rule, per existing keyword with the same normalized name (or whose name/aliases meet
    the new name/aliases):

    * known *different* parent path and descriptions not similar → a homonym in another
      branch: ``create_new`` ("Python" the language vs "Python" the snake);
    * same parent path, or similar descriptions, or nothing to tell them apart → the
      same concept: ``merge`` when the new keyword brings aliases or a description the
      existing one lacks (so they get merged in), otherwise ``alias_of``;
    * the new name equals an existing *alias* → ``alias_of`` that keyword (same
      homonym exception).

    With no collision at all → ``create_new``.
    """
    name = str(payload.get("name") or "").strip()
    if not name:
        return {"action": "create_new", "target": None, "reason": "no name given"}
    new_names = {normalize(n) for n in [name, *_str_list(payload.get("aliases"))]} - {""}
    new_key = normalize(name)
    description = clean_description(payload.get("description"))
    where = payload.get("parent_path", payload.get("path"))
    new_parent: tuple[str, ...] | None = None
    if where is not None:
        new_parent = tuple(normalize(p) for p in path_text(where))
    best: tuple[float, int, str, str] | None = None  # (strength, idx, action, reason)
    homonyms: list[str] = []
    for raw in payload.get("existing") or []:
        if not isinstance(raw, dict) or _as_int(raw.get("idx")) is None:
            continue
        idx = _as_int(raw.get("idx"))
        assert idx is not None
        ex_name = str(raw.get("name") or "")
        ex_aliases = {normalize(a) for a in _str_list(raw.get("aliases"))} - {""}
        ex_key = normalize(ex_name)
        if new_key == ex_key:
            kind, strength = "name", 3.0
        elif new_key in ex_aliases:
            kind, strength = "alias", 2.5
        elif new_names & ({ex_key} | ex_aliases):
            kind, strength = "alias-overlap", 2.0
        elif similarity(name, ex_name) >= 0.9:
            kind, strength = "near-name", 1.0
        else:
            continue
        ex_desc = clean_description(raw.get("description"))
        desc_sim = similarity(description, ex_desc) if description and ex_desc else None
        ex_parent = _parent_key(candidate_path(raw))
        same_parent = None if new_parent is None else new_parent == ex_parent
        if same_parent is False and (desc_sim is None or desc_sim < SAME_DESCRIPTION):
            homonyms.append(f"'{ex_name}' under '{'/'.join(ex_parent) or 'root'}'")
            continue
        if same_parent is None and desc_sim is not None and desc_sim < SAME_DESCRIPTION * 0.5:
            homonyms.append(f"'{ex_name}' (different description, {desc_sim:.2f})")
            continue
        if same_parent:
            strength += 1.0
        if desc_sim is not None:
            strength += desc_sim
        brings_aliases = bool(new_names - ({ex_key} | ex_aliases))
        brings_description = bool(description) and not ex_desc
        action = "merge" if (brings_aliases or brings_description) and kind != "near-name" else "alias_of"
        reason = f"{kind} collision with '{ex_name}'"
        if same_parent:
            reason += ", same parent"
        if desc_sim is not None:
            reason += f", description similarity {desc_sim:.2f}"
        if action == "merge":
            reason += "; new aliases/description to merge in"
        if best is None or strength > best[0]:
            best = (strength, idx, action, reason)
    if best is None:
        reason = "homonym in another branch: " + ", ".join(homonyms) if homonyms else "no collision"
        return {"action": "create_new", "target": None, "reason": reason}
    return {"action": best[2], "target": best[1], "reason": best[3]}


# -- disambiguate ------------------------------------------------------------------------

#: The winner must lead the runner-up by this much, or the answer is ``ambiguous``.
DISAMBIGUATION_MARGIN = 0.08


def disambiguate(payload: dict[str, Any], agent: LocalAgent | None = None) -> dict[str, Any]:
    """Pick among same-name keywords by what the query says *beyond* the shared name.

    "python 蛇" → the Python under 动物/爬行动物; a bare "python" stays ``ambiguous``.
    Scores each candidate by the similarity of the query's remaining words (and optional
    ``context``) to its path and description.
    """
    query = str(payload.get("query") or "").strip()
    context = str(payload.get("context") or "").strip()
    cands = _parse_candidates(payload.get("candidates"))
    if not cands:
        return {"action": "ambiguous", "idx": None, "reason": "no candidates"}
    if len(cands) == 1:
        return {"action": "pick", "idx": cands[0].idx, "reason": "only one candidate"}
    shared = set()
    for c in cands:
        shared.update(tokenize(c.name))
        for alias in c.aliases:
            shared.update(tokenize(alias))
    extra_tokens = [t for t in tokenize(query) if t not in shared]
    extra = " ".join(extra_tokens)
    probe = " ".join(part for part in (extra, context) if part)
    semantic: list[float] | None = None
    texts = [" ".join([*c.path[:-1], c.description]) for c in cands]
    if agent is not None and probe:
        semantic = agent.semantic_scores(probe, texts)
    scored: list[tuple[float, _Candidate]] = []
    for pos, c in enumerate(cands):
        score = 0.0
        if probe:
            segments = [*c.path[:-1], c.description] if c.description else c.path[:-1]
            for seg in segments:
                score = max(score, similarity(probe, seg))
                seg_tokens = set(tokenize(seg))
                if extra_tokens and seg_tokens:
                    hit = sum(1 for t in set(extra_tokens) if t in seg_tokens)
                    score = max(score, hit / len(set(extra_tokens)))
            score = 0.7 * score + 0.3 * similarity(probe, texts[pos])
        score += 0.05 * similarity(query, c.name)  # the name itself breaks exact ties weakly
        if semantic is not None:
            score += SEMANTIC_WEIGHT * semantic[pos]
        scored.append((score, c))
    scored.sort(key=lambda item: (-item[0], item[1].idx))
    (top, winner), (second, runner) = scored[0], scored[1]
    detail = f"'{'/'.join(winner.path)}' {top:.2f} vs '{'/'.join(runner.path)}' {second:.2f}"
    if not probe or top - second < DISAMBIGUATION_MARGIN or top < 0.1:
        return {"action": "ambiguous", "idx": None, "reason": f"no clear winner: {detail}"}
    return {"action": "pick", "idx": winner.idx, "reason": f"path/description fit: {detail}"}


HANDLERS: dict[str, Callable[[dict[str, Any], LocalAgent], dict[str, Any]]] = {
    "pick_branch": pick_branch,
    "dedup_check": dedup_check,
    "disambiguate": disambiguate,
    "link_info": link_info,
    "reorganize": reorganize,
}

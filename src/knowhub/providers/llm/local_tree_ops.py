"""LocalAgent handlers for KeywordTree maintenance: ``link_info`` and ``reorganize``.

Payload fields read:

``link_info``
    ``content`` *required* (the info text, ≤ 2,000 chars), ``candidates``: list of ``{idx,
    name, path?, matched?, aliases?}``; ``matched`` is the text that hit the keyword (a
    string or a list of strings; when absent the name and aliases are searched).
``reorganize``
    ``nodes``: list of ``{idx, name, path?, parent_idx, description?, child_count?,
    info_count?}``. The root is the node with no ``parent_idx`` named ``root``; nodes
    whose ``parent_idx`` is None or the root are top-level.

Both are heuristics over the text only; their answers are proposals that the tree engine
validates and applies (or shows to a user) as one all-or-nothing operation.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowhub.providers.llm.local_scoring import (
    TokenWeights,
    candidate_path,
    clean_description,
    name_match,
    stop_tokens,
)
from knowhub.text import normalize, similarity, tokenize

if TYPE_CHECKING:
    from knowhub.providers.llm.local import LocalAgent

__all__ = ["link_info", "reorganize"]

# -- link_info ---------------------------------------------------------------------------

#: At most this many PRIMARY links per info: an info is *about* one to three keywords.
MAX_PRIMARY = 3
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])|(?<=[.])\s+")
_WORD = re.compile(r"[^\W_]+[+#]*")
_HAS_NON_LATIN = re.compile(r"[^\x00-\x7f]")
_EXAMPLE_MARKERS = ("例如", "比如", "譬如", "举例", "例子", "e.g.", "for example", "such as", "for instance")
_SOURCE_MARKERS = ("来源", "出处", "出自", "引自", "参考", "source:", "source ", "via ", "according to", "reference")
_MARKER_WINDOW = 24


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _forms(candidate: dict[str, Any]) -> list[str]:
    matched = candidate.get("matched")
    forms: list[str] = []
    if isinstance(matched, str) and matched.strip():
        forms.append(matched)
    elif isinstance(matched, list):
        forms.extend(m for m in matched if isinstance(m, str) and m.strip())
    forms.append(str(candidate.get("name") or ""))
    aliases = candidate.get("aliases")
    if isinstance(aliases, list):
        forms.extend(a for a in aliases if isinstance(a, str))
    unique: list[str] = []
    for form in forms:
        if normalize(form) and form not in unique:
            unique.append(form)
    return unique


@dataclass
class _Hit:
    count: int = 0
    first: tuple[int, int] = (1 << 30, 0)  # (sentence number, position)
    in_title: bool = False
    example_only: bool = True
    source_only: bool = True


def _marked(prefix: str, markers: Iterable[str]) -> bool:
    window = prefix[-_MARKER_WINDOW:]
    return any(marker in window for marker in markers)


def _find(form: str, sentence: str) -> list[tuple[int, str]]:
    """Positions of ``form`` in ``sentence`` with the text before each (same representation).

    Latin-only forms match on word boundaries of the folded text ("go" not in "google");
    forms with CJK match anywhere in the normalized text, which has no spaces.
    """
    if _HAS_NON_LATIN.search(normalize(form)):
        hay, needle = normalize(sentence), normalize(form)
        out: list[tuple[int, str]] = []
        start = hay.find(needle)
        while start != -1:
            out.append((start, hay[:start]))
            start = hay.find(needle, start + len(needle))
        return out
    words = _WORD.findall(_fold(form))
    if not words:
        return []
    pattern = r"(?<![^\W_])" + r"[\W_]*".join(re.escape(w) for w in words) + r"(?![^\W_])"
    folded = _fold(sentence)
    return [(m.start(), folded[: m.start()]) for m in re.finditer(pattern, folded)]


def link_info(payload: dict[str, Any], agent: LocalAgent | None = None) -> dict[str, Any]:
    """Relation of an info to each keyword that matched it (seed 000 §5.5).

    PRIMARY: the keyword appears in the title-like first sentence, or is the most
    frequent match (at most :data:`MAX_PRIMARY`). EXAMPLE / SOURCE: every occurrence
    follows an example marker ("例如", "such as") / a source marker ("来源", "source:").
    RELATED: everything else, including keywords that matched but are not in the text.
    """
    content = str(payload.get("content") or "")
    raw = [c for c in payload.get("candidates") or [] if isinstance(c, dict)]
    cands = [c for c in raw if isinstance(c.get("idx"), int) and not isinstance(c.get("idx"), bool)]
    if not cands:
        return {"links": [], "reason": "no candidates"}
    sentences = [s for s in _SENTENCE_END.split(content) if s and s.strip()] or [content]
    hits: dict[int, _Hit] = {}
    for cand in cands:
        hit = _Hit()
        for form in _forms(cand):
            for number, sentence in enumerate(sentences):
                for pos, prefix in _find(form, sentence):
                    hit.count += 1
                    hit.first = min(hit.first, (number, pos))
                    hit.in_title = hit.in_title or number == 0
                    hit.example_only = hit.example_only and _marked(prefix, _EXAMPLE_MARKERS)
                    hit.source_only = hit.source_only and _marked(prefix, _SOURCE_MARKERS)
        hits[cand["idx"]] = hit
    found = [c["idx"] for c in cands if hits[c["idx"]].count > 0]
    relation: dict[int, str] = {c["idx"]: "RELATED" for c in cands}
    for idx in found:
        if hits[idx].example_only:
            relation[idx] = "EXAMPLE"
        elif hits[idx].source_only:
            relation[idx] = "SOURCE"
    plain = [idx for idx in found if relation[idx] == "RELATED"]
    primary: list[int] = []
    if plain:
        most = max(plain, key=lambda i: (hits[i].count, -hits[i].first[0], -hits[i].first[1]))
        titled = sorted(
            (i for i in plain if hits[i].in_title),
            key=lambda i: (-hits[i].count, hits[i].first),
        )
        primary = list(dict.fromkeys([*titled, most]))[:MAX_PRIMARY]
        if most not in primary and len(primary) < MAX_PRIMARY:
            primary.append(most)
    for idx in primary:
        relation[idx] = "PRIMARY"
    links = [{"idx": c["idx"], "relation": relation[c["idx"]]} for c in cands]
    summary = ", ".join(
        f"'{c.get('name')}'×{hits[c['idx']].count}{' title' if hits[c['idx']].in_title else ''}"
        f"→{relation[c['idx']]}"
        for c in cands
    )
    return {"links": links, "reason": summary}


# -- reorganize --------------------------------------------------------------------------

#: Sibling names at least this similar are proposed for merging.
MERGE_SIMILARITY = 0.9
#: Name score a top-level leaf needs to be moved under another node.
MOVE_SCORE = 0.6
#: A node with more children than this gets its children grouped under new parents.
CROWDED = 50
MIN_GROUP = 3
MAX_PROPOSALS = 50
MAX_DESCRIPTIONS = 100
_PAIRWISE_LIMIT = 150
_PARENT_CANDIDATES = 200
_STOP = stop_tokens()
_LEADING_WORD = re.compile(r"[^\W_]+")


@dataclass
class _Node:
    idx: int
    name: str
    path: list[str]
    parent_idx: int | None
    description: str
    child_count: int
    info_count: int

    @property
    def weight(self) -> int:
        return self.child_count + self.info_count


def _nodes(payload: dict[str, Any]) -> list[_Node]:
    out: list[_Node] = []
    seen: set[int] = set()
    for raw in payload.get("nodes") or []:
        if not isinstance(raw, dict):
            continue
        idx = raw.get("idx")
        name = raw.get("name")
        if not isinstance(idx, int) or isinstance(idx, bool) or idx in seen or not isinstance(name, str):
            continue
        seen.add(idx)
        parent = raw.get("parent_idx")
        out.append(
            _Node(
                idx=idx,
                name=name,
                path=candidate_path(raw),
                parent_idx=parent if isinstance(parent, int) and not isinstance(parent, bool) else None,
                description=clean_description(raw.get("description")),
                child_count=int(raw.get("child_count") or 0),
                info_count=int(raw.get("info_count") or 0),
            )
        )
    by_idx = {n.idx: n for n in out}
    done: set[int] = set()

    def full_path(node: _Node, trail: frozenset[int]) -> list[str]:
        # full parent names (prompt paths may be cut to a few ancestors) when the parent is listed
        if node.idx in done:
            return node.path
        parent = by_idx.get(node.parent_idx) if node.parent_idx is not None else None
        is_root = parent is not None and parent.parent_idx is None and normalize(parent.name) == "root"
        if parent is not None and not is_root and parent.idx not in trail:
            node.path = [*full_path(parent, trail | {node.idx}), node.name]
        done.add(node.idx)
        return node.path

    for node in out:
        full_path(node, frozenset())
    return out


def _find_root(nodes: list[_Node]) -> int | None:
    for node in nodes:
        if node.parent_idx is None and normalize(node.name) == "root":
            return node.idx
    return None


def _propose_merges(groups: dict[int | None, list[_Node]]) -> tuple[list[dict[str, int]], set[int]]:
    merges: list[dict[str, int]] = []
    sources: set[int] = set()
    for siblings in groups.values():
        ordered = sorted(siblings, key=lambda n: (-n.weight, n.idx))  # heaviest survives
        by_key: dict[str, _Node] = {}
        for node in ordered:
            key = normalize(node.name)
            if not key:
                continue
            dst = by_key.get(key)
            if dst is None and len(ordered) <= _PAIRWISE_LIMIT:
                dst = next(
                    (other for other in by_key.values() if similarity(node.name, other.name) >= MERGE_SIMILARITY),
                    None,
                )
            if dst is None:
                by_key[key] = node
                continue
            merges.append({"src_idx": node.idx, "dst_idx": dst.idx})
            sources.add(node.idx)
            if len(merges) >= MAX_PROPOSALS:
                return merges, sources
    return merges, sources


def _content_tokens(name: str) -> set[str]:
    return {t for t in tokenize(name) if t not in _STOP and not (len(t) == 1 and not t.isascii())}


def _propose_moves(
    nodes: list[_Node], top_level: set[int], root: int | None, skip: set[int]
) -> list[dict[str, int]]:
    """Top-level leaves whose name contains (or nearly equals the siblings of) a deeper node."""
    by_idx = {n.idx: n for n in nodes}
    targets = [n for n in nodes if n.idx != root and n.idx not in skip]
    weights = TokenWeights(tokenize(n.name) for n in targets)
    index: dict[str, list[int]] = defaultdict(list)
    for n in targets:
        for token in _content_tokens(n.name):
            index[token].append(n.idx)
    moves: list[dict[str, int]] = []
    orphans = [n for n in nodes if n.idx in top_level and n.child_count == 0 and n.idx not in skip]
    for orphan in orphans:
        shared: dict[int, int] = defaultdict(int)
        for token in _content_tokens(orphan.name):
            for hit in index.get(token, ()):
                if hit != orphan.idx:
                    shared[hit] += 1
        pool = sorted(shared, key=lambda i: (-shared[i], i))[:_PARENT_CANDIDATES]
        best: tuple[float, int] | None = None
        for other_idx in pool:
            other = by_idx[other_idx]
            ms = name_match(orphan.name, other.name, weights)
            if ms.exact:
                continue  # a same-name node elsewhere is a dedup question, not a move
            if ms.name_cov >= 0.999:  # the other's name is inside the orphan's: a broader topic
                candidate = (ms.score, other.idx)
            elif ms.score >= MOVE_SCORE and other.idx not in top_level and other.parent_idx is not None:
                candidate = (0.9 * ms.score, other.parent_idx)  # join a similar node's parent
            else:
                continue
            if candidate[1] in (orphan.idx, root) or candidate[1] in skip:
                continue
            if best is None or candidate[0] > best[0]:
                best = candidate
        if best is not None and best[0] >= MOVE_SCORE:
            moves.append({"idx": orphan.idx, "new_parent_idx": best[1]})
            if len(moves) >= MAX_PROPOSALS:
                break
    return moves


def _leading_key(name: str) -> tuple[str, str] | None:
    """(grouping key, display name) of a name's leading word: first Latin word or first two
    CJK characters."""
    folded = _fold(name).strip()
    if not folded:
        return None
    norm = normalize(name)
    if norm and not norm[0].isascii():
        display = "".join(ch for ch in name.strip() if normalize(ch))[:2]
        return (norm[:2], display) if len(norm) >= 2 else None
    for match in _LEADING_WORD.finditer(name):
        word = match.group(0)
        tokens = tokenize(word)
        if tokens and tokens[0] not in _STOP:
            return tokens[0], word
    return None


def _propose_groups(
    groups: dict[int | None, list[_Node]], skip: set[int]
) -> tuple[list[dict[str, Any]], list[dict[str, int]]]:
    new_parents: list[dict[str, Any]] = []
    moves: list[dict[str, int]] = []
    for parent_idx, children in groups.items():
        if parent_idx is None or len(children) <= CROWDED:
            continue
        keyed: dict[str, list[_Node]] = defaultdict(list)
        display: dict[str, str] = {}
        for child in children:
            if child.idx in skip:
                continue
            lead = _leading_key(child.name)
            if lead is not None:
                keyed[lead[0]].append(child)
                display.setdefault(lead[0], lead[1])
        existing = {normalize(c.name): c for c in children}
        ranked = sorted(keyed.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for key, members in ranked[:10]:
            holder = existing.get(key)
            members = [m for m in members if holder is None or m.idx != holder.idx]
            if len(members) < MIN_GROUP or len(members) >= len(children) - 1:
                continue
            if holder is not None:  # a sibling already names the group: move them under it
                moves.extend({"idx": m.idx, "new_parent_idx": holder.idx} for m in members)
            else:
                new_parents.append(
                    {"name": display[key], "parent_idx": parent_idx, "child_idxs": [m.idx for m in members]}
                )
            if len(new_parents) >= MAX_PROPOSALS:
                return new_parents, moves
    return new_parents, moves


def reorganize(payload: dict[str, Any], agent: LocalAgent | None = None) -> dict[str, Any]:
    """Propose a bounded clean-up plan for a (sub)tree (seed 000 §8 V4).

    (a) merge siblings with equal normalized names or similarity ≥ 0.9 into the one with
    the most children and infos; (b) move top-level leaves under a node whose name they
    contain ("Python 装饰器" → "Python") or next to a very similar keyword; (c) describe
    keywords with an empty description as "<name> (under <parent path>)"; (d) under a node
    with more than 50 children, group children sharing a leading word under a new parent
    (or move them under a sibling that already has that name).
    """
    nodes = _nodes(payload)
    if not nodes:
        return {"moves": [], "merges": [], "new_parents": [], "descriptions": [], "reason": "no nodes"}
    root = _find_root(nodes)
    groups: dict[int | None, list[_Node]] = defaultdict(list)
    top_level: set[int] = set()
    for node in nodes:
        if node.idx == root:
            continue
        parent = None if node.parent_idx is None or node.parent_idx == root else node.parent_idx
        groups[parent].append(node)
        if parent is None:
            top_level.add(node.idx)
    merges, merged = _propose_merges(groups)
    moves = _propose_moves(nodes, top_level, root, merged)
    new_parents, group_moves = _propose_groups(groups, merged | {m["idx"] for m in moves})
    moves = (moves + group_moves)[:MAX_PROPOSALS]
    descriptions: list[dict[str, Any]] = []
    for node in nodes:
        if node.idx == root or node.idx in merged or node.description.strip():
            continue
        parents = node.path[:-1]
        where = f"under {' > '.join(parents)}" if parents else "top level"
        descriptions.append({"idx": node.idx, "description": f"{node.name} ({where})"})
        if len(descriptions) >= MAX_DESCRIPTIONS:
            break
    reason = (
        f"{len(merges)} merges of same-name siblings, {len(moves)} moves, "
        f"{len(new_parents)} new parents, {len(descriptions)} descriptions for empty ones"
    )
    return {
        "moves": moves,
        "merges": merges,
        "new_parents": new_parents,
        "descriptions": descriptions,
        "reason": reason,
    }

"""Loaders for the real benchmark data in ``../shared/bench`` (see its README).

Shared by the benchmark scripts of every engine. Nothing here writes files.

* :func:`load_icd10cm` — the ICD-10-CM tabular list as a tree of described nodes.
* :func:`load_google_taxonomy` — Google's product taxonomy (``id - A > B > C`` lines).
* :func:`synthetic_expand` — a bigger tree built by replicating a real one (for 1M runs).
* :func:`load_locomo` — LoCoMo conversations with sessions, turns and QA items.

Tree nodes are plain dicts ``{id, name, code, parent_id, synonyms, level}`` listed parents
before children (``parent_id`` None for top-level nodes).
"""

from __future__ import annotations

import json
import random
import re
import xml.etree.ElementTree as ET
from collections import deque
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
ICD_FILE = "icd10cm-tabular-April-1-2026.xml"
GOOGLE_FILE = "google_product_taxonomy-with-ids.en-US.2021-09-21.txt"
LOCOMO_FILE = "locomo-dev.json"

Node = dict[str, Any]


def _text(elem: ET.Element | None) -> str:
    return " ".join((elem.text or "").split()) if elem is not None else ""


def _inclusion_terms(elem: ET.Element) -> list[str]:
    """Notes of the ``<inclusionTerm>`` children of a diag or section (its synonyms)."""
    out: list[str] = []
    for term in elem.findall("inclusionTerm"):
        for note in term.findall("note"):
            text = _text(note)
            if text and text not in out:
                out.append(text)
    return out


def _seven_chr(elem: ET.Element) -> list[tuple[str, str]]:
    block = elem.find("sevenChrDef")
    if block is None:
        return []
    return [(ext.get("char", ""), _text(ext)) for ext in block.findall("extension") if ext.get("char")]


def _seventh_code(code: str, char: str) -> str:
    """``S00.00`` + ``A`` → ``S00.00XA``: pad with the placeholder X to six characters."""
    head, _, tail = code.partition(".")
    return f"{head}.{tail.ljust(3, 'X')}{char}"

def load_icd10cm(path: str | Path = BENCH_DIR / ICD_FILE, *, seventh_characters: bool = True) -> list[Node]:
    """ICD-10-CM tabular list → nodes: chapters → sections → codes → sub-codes.

    ``name`` is the description, ``code`` the code (chapter number, section range, or
    diagnosis code), ``synonyms`` the inclusion terms. With ``seventh_characters`` (the
    default, as ``simple-icd-10-cm`` does) every leaf code under a ``<sevenChrDef>`` gets
    one child per 7th character (``S00.00XA`` "..., initial encounter"), which brings the
    2026 list to about 98k described nodes.
    """
    root = ET.parse(Path(path)).getroot()
    nodes: list[Node] = []

    def add(node_id: str, name: str, code: str, parent: str | None, level: int, synonyms: list[str]) -> None:
        nodes.append({"id": node_id, "name": name, "code": code, "parent_id": parent, "synonyms": synonyms, "level": level})

    def walk_diag(diag: ET.Element, parent: str, level: int, seventh: list[tuple[str, str]]) -> None:
        code = _text(diag.find("name"))
        desc = _text(diag.find("desc"))
        if not code or not desc:
            return
        add(code, desc, code, parent, level, _inclusion_terms(diag))
        seventh = _seven_chr(diag) or seventh
        children = diag.findall("diag")
        for child in children:
            walk_diag(child, code, level + 1, seventh)
        if not children and seventh_characters:
            for char, ext in seventh:
                full = _seventh_code(code, char)
                add(full, f"{desc}, {ext}", full, code, level + 1, [])

    for chapter in root.findall("chapter"):
        number = _text(chapter.find("name"))
        chapter_id = f"chapter-{number}"
        add(chapter_id, _text(chapter.find("desc")), number, None, 1, [])
        for section in chapter.findall("section"):
            section_code = section.get("id") or _text(section.find("desc"))
            section_id = f"section-{section_code}"  # a one-category section shares its code
            add(section_id, _text(section.find("desc")), section_code, chapter_id, 2, _inclusion_terms(section))
            for diag in section.findall("diag"):
                walk_diag(diag, section_id, 3, [])
    return nodes


def load_google_taxonomy(path: str | Path = BENCH_DIR / GOOGLE_FILE) -> list[Node]:
    """Google product taxonomy lines ``1604 - Apparel & Accessories > Clothing`` → nodes."""
    nodes: list[Node] = []
    by_path: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        node_id, sep, full = line.partition(" - ")
        if not sep or not node_id.strip().isdigit():
            continue
        parts = [p.strip() for p in full.split(" > ") if p.strip()]
        if not parts:
            continue
        parent = by_path.get(" > ".join(parts[:-1])) if len(parts) > 1 else None
        if len(parts) > 1 and parent is None:
            continue  # a child listed before its parent does not occur in the published file
        by_path[" > ".join(parts)] = node_id.strip()
        nodes.append({"id": node_id.strip(), "name": parts[-1], "code": node_id.strip(), "parent_id": parent, "synonyms": [], "level": len(parts)})
    return nodes


def bfs_subset(nodes: list[Node], n: int) -> list[Node]:
    """The first ``n`` nodes in breadth-first order (every node's parent is included)."""
    children: dict[str | None, list[Node]] = {}
    for node in nodes:
        children.setdefault(node["parent_id"], []).append(node)
    out: list[Node] = []
    queue: deque[Node] = deque(children.get(None, []))
    while queue and len(out) < n:
        node = queue.popleft()
        out.append(node)
        queue.extend(children.get(node["id"], []))
    return out


_SYLLABLES = ("ka", "lo", "mi", "ren", "tu", "sa", "vel", "no", "qui", "dar", "phe", "zo", "lin", "mor", "ta", "bex")


def _label(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize()


def synthetic_expand(nodes: list[Node], target_n: int, seed: int = 7) -> list[Node]:
    """A tree of exactly ``target_n`` nodes made of copies of ``nodes`` (parents first).

    Replica 0 is the original tree unchanged. Replica ``r >= 1`` hangs under a synthetic
    top-level node ``Replica r <Label>`` (``Label`` a pseudo-word drawn from ``seed`` and
    ``r``, e.g. ``Kalomi``) and is a copy whose ids are ``r{r}:{id}``, whose names are
    ``"{name} {Label}"`` and whose codes are ``"{code}-{Label}"``; synonyms are dropped. So
    every name stays unique and realistic in length, the shape (depth, fan-out) of each
    replica is the real one, and the result is deterministic for a given seed. The last
    replica is cut in parents-first order, so every node's parent is present.
    """
    if target_n <= len(nodes):
        return bfs_subset(nodes, target_n)
    out = [dict(n) for n in nodes]
    replica = 0
    used_labels: set[str] = set()
    while len(out) < target_n:
        replica += 1
        rng = random.Random(seed * 1_000_003 + replica)
        label = _label(rng)
        while label in used_labels:
            label = _label(rng) + str(replica)
        used_labels.add(label)
        top = f"replica-{replica}"
        out.append({"id": top, "name": f"Replica {replica} {label}", "code": top, "parent_id": None, "synonyms": [], "level": 1})
        for node in nodes:
            if len(out) >= target_n:
                break
            parent = f"r{replica}:{node['parent_id']}" if node["parent_id"] is not None else top
            out.append(
                {
                    "id": f"r{replica}:{node['id']}",
                    "name": f"{node['name']} {label}",
                    "code": f"{node['code']}-{label}",
                    "parent_id": parent,
                    "synonyms": [],
                    "level": int(node.get("level", 1)) + 1,
                }
            )
    return out


_DIA_ID = re.compile(r"D\d+:\d+")


def parse_evidence(raw: Any, known: set[str] | None = None) -> list[str]:
    """Dialog ids from an evidence field: splits ``"D8:6; D9:17"``, drops unknown ids."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            continue
        for dia_id in _DIA_ID.findall(item):
            if (known is None or dia_id in known) and dia_id not in out:
                out.append(dia_id)
    return out


def load_locomo(path: str | Path = BENCH_DIR / LOCOMO_FILE) -> list[dict[str, Any]]:
    """LoCoMo conversations as ``{sample_id, speakers, sessions, qa, observation,
    session_summary, event_summary}``.

    ``sessions`` is ``[{index, date_time, turns: [{dia_id, speaker, text, blip_caption?}]}]``
    in session order; ``qa`` items are ``{question, answer (str or None), category,
    evidence (valid dia ids), raw_evidence, adversarial_answer?}``. Answers that are numbers
    become strings; category 5 items have ``answer`` None.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out: list[dict[str, Any]] = []
    for conv in data:
        body = conv.get("conversation") or {}
        indexes = sorted(
            int(m.group(1)) for key in body if (m := re.fullmatch(r"session_(\d+)", key))
        )
        sessions = []
        known: set[str] = set()
        for index in indexes:
            turns = []
            for turn in body.get(f"session_{index}") or []:
                if not isinstance(turn, dict) or not turn.get("dia_id"):
                    continue
                item = {"dia_id": str(turn["dia_id"]), "speaker": turn.get("speaker", ""), "text": turn.get("text", "")}
                if turn.get("blip_caption"):
                    item["blip_caption"] = turn["blip_caption"]
                turns.append(item)
                known.add(item["dia_id"])
            sessions.append({"index": index, "date_time": body.get(f"session_{index}_date_time", ""), "turns": turns})
        qa = []
        for item in conv.get("qa") or []:
            answer = item.get("answer")
            entry = {
                "question": item.get("question", ""),
                "answer": None if answer is None else str(answer),
                "category": int(item.get("category", 0) or 0),
                "evidence": parse_evidence(item.get("evidence"), known),
                "raw_evidence": item.get("evidence"),
            }
            if "adversarial_answer" in item:
                entry["adversarial_answer"] = item["adversarial_answer"]
            qa.append(entry)
        out.append(
            {
                "sample_id": conv.get("sample_id", ""),
                "speakers": (body.get("speaker_a", ""), body.get("speaker_b", "")),
                "sessions": sessions,
                "qa": qa,
                "observation": conv.get("observation") or {},
                "session_summary": conv.get("session_summary") or {},
                "event_summary": conv.get("event_summary") or {},
            }
        )
    return out


__all__ = [
    "BENCH_DIR",
    "bfs_subset",
    "load_google_taxonomy",
    "load_icd10cm",
    "load_locomo",
    "parse_evidence",
    "synthetic_expand",
]

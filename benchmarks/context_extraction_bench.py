"""Context extractors on a hand-labelled bilingual set: precision and recall per memory type.

Run from the repository root::

    python benchmarks/context_extraction_bench.py                 # dev and held-out, offline rules
    python benchmarks/context_extraction_bench.py --out-json out.json

Data: ``benchmarks/data/context_extraction_labelled.json`` — 40 short agent sessions
(Chinese, English, mixed) written by hand, each with the memories a context extractor
should write (profile facts, preferences, entities, events with their time, cases with
cause and fix) and the messages that state them. The split was fixed before any tuning:
``s01``–``s20`` dev, ``s21``–``s40`` held-out.

Protocol. Each session is committed through the public API
(``ContextEngineService.commit_session``, one user per session) and the memories written
are read back from the user's and agent's memory trees. A written memory is a *hit* when it
matches an expected memory of its type that no other memory matched (rules below); a
memory that matches an ``optional`` item is not counted; anything else is a *false
positive*. Precision = hits / (hits + false positives); recall = expected memories hit /
expected memories.

Matching, per type:

* profile — one fact of the profile node: same attribute and speaker, value equal after
  normalization or containing the expected value with at most 12 more characters;
* preference — same speaker and polarity, every word of the expected value (the Chinese
  string itself) in the memory's text;
* entity — same name (normalized) and type; an expected relation word must be in the
  memory's relation; a ``relation`` entity (an unnamed relative) is matched by the relation;
* event — same speaker, cites an expected source message, every ``what`` term in its text,
  and its event time lies inside the expected ``when`` (YYYY, YYYY-MM, YYYY-MM-DD or a
  ``start/end`` range; a time that is coarser than ``when`` or not a date does not match);
* case — cites an expected source message, its ``solution`` line holds every solution term
  and none of the cause terms.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from knowhub.context import ContextEngineService
from knowhub.context.core import MemoryCategory, category_root_uri
from knowhub.errors import NotFoundError
from knowhub.providers.llm.local_context_text import MONTHS, parse_when
from knowhub.scope import RequestContext

console = Console()
DATA = Path(__file__).resolve().parent / "data" / "context_extraction_labelled.json"
TYPES = ("profile", "preference", "entity", "event", "case")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_STOP = frozenset(["a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "my", "our", "your", "i", "we", "is", "are", "be"])


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def norm(text: str) -> str:
    return re.sub(r"[\s'’\".,!?;:，。！？；：、]+", "", str(text).lower())


def has_terms(text: str, terms: list[str] | str) -> bool:
    """Every term (or, for an English value, every content word of it) occurs in ``text``."""
    low = text.lower()
    if isinstance(terms, str):
        terms = [terms] if _CJK.search(terms) else [w for w in re.findall(r"[\w\-%]+", terms.lower()) if w not in _STOP]
    return all(t.lower() in low or norm(t) in norm(text) for t in terms)


# ---------------------------------------------------------------------- time

def _span(expected: str) -> tuple[date, date, int]:
    """(first day, last day, granularity 0=day 1=month 2=year) of an expected ``when``."""
    if "/" in expected:
        a, b = expected.split("/")
        return date.fromisoformat(a), date.fromisoformat(b), 0
    parts = [int(p) for p in expected.split("-")]
    if len(parts) == 1:
        return date(parts[0], 1, 1), date(parts[0], 12, 31), 2
    if len(parts) == 2:
        nxt = date(parts[0] + parts[1] // 12, parts[1] % 12 + 1, 1)
        return date(parts[0], parts[1], 1), date.fromordinal(nxt.toordinal() - 1), 1
    day = date(*parts)
    return day, day, 0


def produced_span(text: str) -> tuple[date, date, int] | None:
    """Span of a memory's event time: ``8 May 2023``, ``May 2023``, ``2023`` or ISO; None
    for relative descriptions ("the week before 8 May 2023")."""
    text = (text or "").strip()
    if re.fullmatch(r"\d{4}", text):
        return _span(text)
    month = re.fullmatch(r"([A-Za-z]+) (\d{4})", text)
    if month and month.group(1).lower() in MONTHS:
        return _span(f"{month.group(2)}-{MONTHS.index(month.group(1).lower()) + 1:02d}")
    if re.fullmatch(r"\d{1,2} [A-Za-z]+ \d{4}|\d{4}-\d{2}-\d{2}(?:T.*)?", text):
        when = parse_when(text)
        if when is not None:
            return when.date(), when.date(), 0
    return None


def when_matches(expected: str, produced: str) -> bool:
    span = produced_span(produced)
    if span is None:
        return False
    first, last, _ = _span(expected)
    return first <= span[0] and span[1] <= last  # a coarser time never lies inside a finer one


# ---------------------------------------------------------------------- reading what was written

def written(svc: ContextEngineService, ctx: RequestContext) -> list[dict[str, Any]]:
    """The memories of one session's user and agent, as flat dicts per scored type."""
    uris: dict[str, None] = {}
    for view in dict.fromkeys((ctx, ctx.private())):
        for cat in MemoryCategory:
            root = category_root_uri(view, cat)
            if cat is MemoryCategory.PROFILE:
                root = root.rpartition("/")[0]
            try:
                for child in svc.list_children(ctx, root, recursive=True):
                    if child.is_node:
                        uris[child.uri] = None
            except NotFoundError:
                continue
    out: list[dict[str, Any]] = []
    for uri in uris:
        node = svc.get_node(ctx, uri)
        meta = node.metadata
        speaker = (meta.get("speakers") or [""])[0]
        refs = [str(r) for r in meta.get("source_refs") or []]
        text = f"{node.abstract}\n{node.overview}"
        if node.category == "profile":
            for fact in (meta.get("facts") or {}).values():
                out.append({"type": "profile", "uri": uri, "speaker": fact.get("subject", ""), "attribute": fact.get("attribute", ""),
                            "value": str(fact.get("value", "")), "source": fact.get("source_refs") or refs})
        elif node.category == "preferences":
            out.append({"type": "preference", "uri": uri, "speaker": speaker, "polarity": meta.get("polarity", ""),
                        "text": text, "source": refs})
        elif node.category == "entities":
            out.append({"type": "entity", "uri": uri, "name": str(meta.get("title") or uri.rsplit("/", 1)[-1]),
                        "entity_type": meta.get("entity_type", ""), "relation": str(meta.get("relation") or ""), "source": refs})
        elif node.category == "events":
            out.append({"type": "event", "uri": uri, "speaker": speaker, "when": str(meta.get("event_time") or ""),
                        "text": text, "source": refs})
        elif node.category == "cases":
            lines = dict(line[2:].split(": ", 1) for line in node.overview.splitlines() if line.startswith("- ") and ": " in line)
            out.append({"type": "case", "uri": uri, "solution": lines.get("solution", ""), "cause": lines.get("cause", ""),
                        "source": refs})
    return out


# ---------------------------------------------------------------------- matching

def matches(exp: dict[str, Any], got: dict[str, Any]) -> bool:
    """Does the written memory ``got`` state the expected memory ``exp`` (module doc)?"""
    kind = exp["type"]
    same_speaker = norm(exp.get("speaker", "")) == norm(got.get("speaker", ""))
    cites = bool(set(exp.get("source") or []) & set(got.get("source") or []))
    if kind == "profile":
        value, have = norm(exp["value"]), norm(got["value"])
        return same_speaker and exp["attribute"] == got["attribute"] and (value == have or (value in have and len(have) <= len(value) + 12))
    if kind == "preference":
        return same_speaker and exp["polarity"] == got["polarity"] and has_terms(got["text"], exp["value"])
    if kind == "entity":
        if exp["entity_type"] == "relation":
            return got["entity_type"] == "relation" and exp["relation"] in got["relation"].lower()
        if norm(exp["name"]) != norm(got["name"]) or exp["entity_type"] != got["entity_type"]:
            return False
        return not exp.get("relation") or exp["relation"].lower() in got["relation"].lower()
    if kind == "event":
        return same_speaker and cites and has_terms(got["text"], exp["what"]) and when_matches(exp["when"], got["when"])
    if kind == "case":
        return (cites and bool(got["solution"]) and has_terms(got["solution"], exp["solution"])
                and not any(t.lower() in got["solution"].lower() for t in exp["cause"]))
    raise ValueError(f"unknown memory type {kind!r}")


def score_session(session: dict[str, Any], got: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per type: hits, false positives, expected, and the misses / false positives themselves."""
    out: dict[str, dict[str, Any]] = {t: {"hits": 0, "fp": 0, "expected": 0, "missed": [], "false": []} for t in TYPES}
    expected = session["expected"]
    used: set[int] = set()
    for exp in expected:
        out[exp["type"]]["expected"] += 1
    for memory in got:
        kind = memory["type"]
        found = next((i for i, exp in enumerate(expected) if i not in used and exp["type"] == kind and matches(exp, memory)), None)
        if found is not None:
            used.add(found)
            out[kind]["hits"] += 1
        elif any(opt["type"] == kind and matches(opt, memory) for opt in session.get("optional") or []):
            continue
        else:
            out[kind]["fp"] += 1
            out[kind]["false"].append({k: v for k, v in memory.items() if k not in ("text",)} | {"session": session["id"]})
    for i, exp in enumerate(expected):
        if i not in used:
            out[exp["type"]]["missed"].append({**exp, "session": session["id"]})
    return out


def run(doc: dict[str, Any], root: Path) -> dict[str, Any]:
    """Commit every session and score it; totals per split and type."""
    totals: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: {t: {"hits": 0, "fp": 0, "expected": 0, "missed": [], "false": []}
                                                                          for t in TYPES})
    with ContextEngineService(root, durable=False) as svc:
        for session in doc["sessions"]:
            ctx = RequestContext("labelled", f"u-{session['id']}", agent_id="assistant")
            svc.commit_session(ctx, session["messages"], options={"session_id": session["id"], "session_time": session["session_time"]})
            scored = score_session(session, written(svc, ctx))
            for split in (session["split"], "all"):
                for kind, row in scored.items():
                    total = totals[split][kind]
                    for key in ("hits", "fp", "expected"):
                        total[key] += row[key]
                    total["missed"].extend(row["missed"])
                    total["false"].extend(row["false"])
    report: dict[str, Any] = {}
    for split, rows in totals.items():
        report[split] = {}
        for kind, row in rows.items():
            produced = row["hits"] + row["fp"]
            report[split][kind] = {
                "precision": round(row["hits"] / produced, 3) if produced else None,
                "recall": round(row["hits"] / row["expected"], 3) if row["expected"] else None,
                "hits": row["hits"], "false_positives": row["fp"], "expected": row["expected"],
                "missed": row["missed"], "false": row["false"],
            }
    return report


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--show-errors", action="store_true", help="print every miss and false positive")
    args = parser.parse_args(argv)
    doc = load(args.data)
    with tempfile.TemporaryDirectory(prefix="ctx-extract-bench-") as tmp:
        scores = run(doc, Path(tmp))
    report = {
        "command": " ".join(["python", "benchmarks/context_extraction_bench.py", *(argv if argv is not None else sys.argv[1:])]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} python {platform.python_version()}",
        "sessions": len(doc["sessions"]),
        "scores": scores,
    }
    for split in ("dev", "held_out", "all"):
        table = Table(title=f"context extraction, {split} ({sum(1 for s in doc['sessions'] if split in ('all', s['split']))} sessions)")
        for col in ("type", "precision", "recall", "hits", "false pos.", "expected"):
            table.add_column(col)
        for kind in TYPES:
            row = scores[split][kind]
            table.add_row(kind, *[f"{row[k]:.3f}" if row[k] is not None else "-" for k in ("precision", "recall")],
                          str(row["hits"]), str(row["false_positives"]), str(row["expected"]))
        console.print(table)
    if args.show_errors:
        for kind in TYPES:
            for item in scores["all"][kind]["missed"]:
                console.print(f"[yellow]missed[/] {kind}: {item}")
            for item in scores["all"][kind]["false"]:
                console.print(f"[red]false[/] {kind}: {item}")
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()

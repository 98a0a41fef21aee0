"""What changed and who the user is (issue 19 §2, §3): labelled update/contradiction and profile sets.

Run from the repository root::

    python benchmarks/context_updates_bench.py                  # both modes
    python benchmarks/context_updates_bench.py --mode updates   # §2 only
    python benchmarks/context_updates_bench.py --mode profile --show-errors
    python benchmarks/context_updates_bench.py --mode updates --updates-data benchmarks/data/context_acceptance_labelled.json \
        --accepted-decisions      # the accepted-proposal rule (off by default) on its own labelled set

``--mode updates`` (``benchmarks/data/context_updates_labelled.json``, 48 cases, English and
Chinese, u01-u24 dev, u25-u48 held-out): each case's sessions are committed in order
through ``ContextEngineService.commit_session`` (a fresh user per case); the links the
engine wrote are read back from the memory nodes — ``superseded_slots`` (old memory → the
memory that replaced it) and ``conflict`` — and turned into pairs of the messages the
memories cite. A predicted pair is a hit when the gold case has the same pair with the same
type (an update is ordered old → new, a contradiction is unordered); precision = hits /
predicted pairs, recall = gold pairs hit / gold pairs; non-update cases have no gold pairs,
so every link they get is a false positive. The knob ``slots.CHOICE_WINDOW`` (the most
words between a choice wording — "use", "switched to", "改用" — and its value; -1 = no choice
wording needed) is swept, **chosen on dev by F1, and reported on held-out**. With the chosen
window, cases with a question are searched (``search_memory``, top 10): *current first* is
the share where a block citing the current value's message ranks above every block citing
the old one — for the shipped search and for each ``follow_timeline`` setting (``add``,
``reorder``, ``off``).

``--mode profile`` (``benchmarks/data/context_profile_labelled.json``, 52 sessions, p01-p20
dev, p21-p40 held-out, p41-p52 ``in_passing9``: residences said in passing, written with their
rules): each session is committed for a fresh user; the facts of the
profile node are matched to the expected ones as in ``context_extraction_bench.py`` (same
attribute, value equal after normalization or containing it with at most 12 more
characters). Precision = matched facts / facts written, recall = expected facts matched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from knowhub.context import ContextEngineService
from knowhub.context.commit import slots as slot_rules
from knowhub.errors import NotFoundError
from knowhub.scope import RequestContext

console = Console()
DATA = Path(__file__).resolve().parent / "data"
UPDATES = DATA / "context_updates_labelled.json"
PROFILE = DATA / "context_profile_labelled.json"
WINDOWS = (-1, 0, 1, 2, 3, 5)


def norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", str(text).casefold())


def prf(hits: int, predicted: int, gold_hit: int, gold: int) -> dict[str, float]:
    p = hits / predicted if predicted else 1.0
    r = gold_hit / gold if gold else 1.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0,
            "predicted": predicted, "gold": gold, "hits": hits}


# ---------------------------------------------------------------------- updates

def _nodes(svc: ContextEngineService, ctx: RequestContext) -> list[Any]:
    root = f"ctx://{ctx.account_id}/users/{ctx.user_id}/memories"
    try:
        children = svc.list_children(ctx, root, recursive=True)
    except NotFoundError:
        return []
    return [svc.get_node(ctx, c.uri) for c in children if c.is_node]


def predicted_links(svc: ContextEngineService, ctx: RequestContext) -> set[tuple[str, str, str]]:
    """``(type, old, new)`` message pairs of the links in the user's memories (conflicts sorted)."""
    nodes = {n.uri: n for n in _nodes(svc, ctx)}
    out: set[tuple[str, str, str]] = set()
    for node in nodes.values():
        for entry in (node.metadata.get("superseded_slots") or {}).values():
            newer = nodes.get(entry.get("by"))
            if newer is not None:
                out |= {("update", a, b) for a in node.source_refs for b in newer.source_refs if a != b}
        conflict = node.metadata.get("conflict")
        other = nodes.get(conflict.get("with")) if isinstance(conflict, dict) else None
        if other is not None:
            out |= {("conflict", *sorted((a, b))) for a in node.source_refs for b in other.source_refs if a != b}
    return out


def gold_links(case: dict[str, Any]) -> set[tuple[str, str, str]]:
    out = set()
    for link in case["links"]:
        pair = (link["old"], link["new"]) if link["type"] == "update" else tuple(sorted((link["old"], link["new"])))
        out.add((link["type"], *pair))
    return out


def run_case(svc: ContextEngineService, case: dict[str, Any], user: str) -> RequestContext:
    ctx = RequestContext("bench", user)
    for session in case["sessions"]:
        svc.commit_session(ctx, session["messages"], options={"session_id": session["session_id"]})
    return ctx


def current_first(svc: ContextEngineService, ctx: RequestContext, question: dict[str, str]) -> bool:
    blocks = svc.search_memory(ctx, question["text"], top_k=10).blocks
    rank = {"current": None, "old": None}
    for i, block in enumerate(blocks):
        refs = {str(r) for r in block.metadata.get("source_refs") or []}
        for key in rank:
            if rank[key] is None and question[key] in refs:
                rank[key] = i
    return rank["current"] is not None and (rank["old"] is None or rank["current"] < rank["old"])


def bench_updates(svc: ContextEngineService, show_errors: bool, data: Path = UPDATES) -> dict[str, Any]:
    cases = json.loads(data.read_text(encoding="utf-8"))["cases"]
    saved = slot_rules.CHOICE_WINDOW
    sweep: dict[int, dict[str, dict[str, int]]] = {}
    errors: dict[int, list[str]] = defaultdict(list)
    try:
        for window in WINDOWS:
            slot_rules.CHOICE_WINDOW = window
            counts: dict[str, dict[str, int]] = defaultdict(lambda: {"hits": 0, "predicted": 0, "gold_hit": 0, "gold": 0})
            for case in cases:
                ctx = run_case(svc, case, f"w{window}-{case['id']}")
                got, gold = predicted_links(svc, ctx), gold_links(case)
                for group in (case["split"], f"{case['split']}/{case['lang']}"):
                    c = counts[group]
                    c["hits"] += len(got & gold)
                    c["predicted"] += len(got)
                    c["gold_hit"] += len(gold & got)
                    c["gold"] += len(gold)
                if got != gold:
                    errors[window].append(f"{case['id']} ({case['kind']}): got {sorted(got)} gold {sorted(gold)}")
            sweep[window] = dict(counts)
    finally:
        chosen = max(WINDOWS, key=lambda w: (prf(sweep[w]["dev"]["hits"], sweep[w]["dev"]["predicted"],
                                                  sweep[w]["dev"]["gold_hit"], sweep[w]["dev"]["gold"])["f1"], -abs(w - saved)))
        slot_rules.CHOICE_WINDOW = saved
    table = {str(w): {g: prf(c["hits"], c["predicted"], c["gold_hit"], c["gold"]) for g, c in sweep[w].items()} for w in WINDOWS}
    # current value first, with the chosen window
    slot_rules.CHOICE_WINDOW = chosen
    first: dict[str, list[bool]] = defaultdict(list)
    by_setting: dict[str, dict[str, float]] = {}
    shipped = svc.follow_timeline
    try:
        contexts = [(case, run_case(svc, case, f"q-{case['id']}")) for case in cases if case.get("question")]
        svc.flush_index()
        for setting in ("add", "reorder", "off"):  # the search switch, on the same stores
            svc.follow_timeline = setting
            found: dict[str, list[bool]] = defaultdict(list)
            for case, ctx in contexts:
                ok = current_first(svc, ctx, case["question"])
                for group in (case["split"], f"{case['split']}/{case['lang']}"):
                    found[group].append(ok)
                if setting == shipped:
                    first[case["split"]].append(ok)
                    first[f"{case['split']}/{case['lang']}"].append(ok)
                    if not ok:
                        errors[chosen].append(f"{case['id']}: current value not first for {case['question']['text']!r}")
            by_setting[setting] = {g: round(sum(v) / len(v), 3) for g, v in sorted(found.items())}
    finally:
        slot_rules.CHOICE_WINDOW = saved
        svc.follow_timeline = shipped
    if show_errors:
        for line in errors[chosen]:
            console.print(f"  [yellow]{line}[/]")
    return {"chosen_window": chosen, "shipped_window": saved, "sweep": table,
            "current_first": {g: round(sum(v) / len(v), 3) for g, v in sorted(first.items())},
            "current_first_n": {g: len(v) for g, v in sorted(first.items())}, "current_first_by_setting": by_setting,
            "errors": errors[chosen]}


# ---------------------------------------------------------------------- profile

def fact_matches(exp: dict[str, Any], got: dict[str, Any]) -> bool:
    value, have = norm(exp["value"]), norm(got["value"])
    return exp["attribute"] == got["attribute"] and bool(value) and (value == have or (value in have and len(have) <= len(value) + 12))


def bench_profile(svc: ContextEngineService, show_errors: bool) -> dict[str, Any]:
    sessions = json.loads(PROFILE.read_text(encoding="utf-8"))["sessions"]
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"hits": 0, "predicted": 0, "gold_hit": 0, "gold": 0})
    errors: list[str] = []
    for session in sessions:
        ctx = RequestContext("bench", f"p-{session['id']}")
        svc.commit_session(ctx, session["messages"], options={"session_id": session["id"],
                                                               "session_time": "2026-03-01T10:00:00Z"})
        try:
            facts = list((svc.get_node(ctx, f"ctx://bench/users/{ctx.user_id}/memories/profile").metadata.get("facts") or {}).values())
        except NotFoundError:
            facts = []
        used: set[int] = set()
        hits = 0
        for fact in facts:
            match = next((i for i, e in enumerate(session["expected"]) if i not in used and fact_matches(e, fact)), None)
            if match is None:
                errors.append(f"{session['id']} false: {fact['attribute']}={fact['value']!r}")
            else:
                used.add(match)
                hits += 1
        errors += [f"{session['id']} missed: {e['attribute']}={e['value']!r}" for i, e in enumerate(session["expected"]) if i not in used]
        for group in (session["split"], f"{session['split']}/{session['lang']}"):
            c = counts[group]
            c["hits"] += hits
            c["predicted"] += len(facts)
            c["gold_hit"] += len(used)
            c["gold"] += len(session["expected"])
    if show_errors:
        for line in errors:
            console.print(f"  [yellow]{line}[/]")
    return {"scores": {g: prf(c["hits"], c["predicted"], c["gold_hit"], c["gold"]) for g, c in sorted(counts.items())},
            "errors": errors}


def _table(title: str, rows: dict[str, dict[str, float]]) -> None:
    table = Table(title=title)
    for col in ("group", "precision", "recall", "F1", "predicted", "gold"):
        table.add_column(col)
    for group, s in rows.items():
        table.add_row(group, f"{s['precision']:.3f}", f"{s['recall']:.3f}", f"{s['f1']:.3f}", str(s["predicted"]), str(s["gold"]))
    console.print(table)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("updates", "profile", "all"), default="all")
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--updates-data", type=Path, default=UPDATES,
                        help="another labelled update set, e.g. benchmarks/data/context_acceptance_labelled.json")
    parser.add_argument("--accepted-decisions", action="store_true",
                        help="switch on local_context_assistant.SWITCHES['accepted_decision'] (off by default)")
    args = parser.parse_args(argv)
    if args.accepted_decisions:
        from knowhub.providers.llm.local_context_assistant import SWITCHES
        SWITCHES["accepted_decision"] = True
    report: dict[str, Any] = {
        "command": " ".join(["python", "benchmarks/context_updates_bench.py", *(argv if argv is not None else sys.argv[1:])]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} python {platform.python_version()}",
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory(prefix="ctx-updates-") as tmp:
        svc = ContextEngineService(Path(tmp) / "ctx", durable=False)
        report["embedder"] = svc.embedder.name
        try:
            if args.mode in ("updates", "all"):
                report["updates"] = bench_updates(svc, args.show_errors, args.updates_data)
                up = report["updates"]
                console.print(f"updates: window chosen on dev = {up['chosen_window']} (shipped {up['shipped_window']})")
                _table(f"updates and contradictions, window {up['chosen_window']}", up["sweep"][str(up["chosen_window"])])
                console.print("current value ranked first:", up["current_first"])
                console.print("by search setting (follow_timeline):", up["current_first_by_setting"])
            if args.mode in ("profile", "all"):
                report["profile"] = bench_profile(svc, args.show_errors)
                _table("profile facts", report["profile"]["scores"])
        finally:
            svc.close()
    if args.out_json:
        args.out_json.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()

"""Entity noise of the offline extractor (issue 19 §1): how many entity names each chat gets,
and how many of a hand-labelled sample are names.

Run from the repository root (seconds; no embedder, no store)::

    python benchmarks/entity_names_bench.py                        # the English and Chinese dev tech chats
    python benchmarks/entity_names_bench.py --sets tech_chats_xl_en,social_chats --out-json names.json

For every chat, every session is passed to the offline ``extract_entities_events`` rule as
the engine passes it (messages ``{id, role, content, timestamp}``, the session time) and
the distinct ``routing_key`` of its entity candidates are counted. Precision: the sample of
``benchmarks/data/entity_names_labelled.json`` (120 names that main made on the English
development chats, labelled name / noise by hand); "kept" are the sample's names this code
still makes on the same chat, precision = labelled names among those kept, "names lost" =
labelled names no longer made. ``locomo`` reads ``../shared/bench/locomo-dev.json``
(never committed) and ``social_chats`` our LoCoMo-style set.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "src"))

from knowhub.providers.llm.local_context_rules import extract_entities_events  # noqa: E402

DEFAULT_SETS = ("tech_chats_en,tech_chats_zh,tech_chats_fresh_en,tech_chats_fresh_zh,tech_chats_long_en,"
                "tech_chats_long_zh,tech_chats_xl_en,tech_chats_xl_zh,tech_chats_xl2_en,tech_chats_xl2_zh,social_chats")
Session = tuple[str, list[dict[str, Any]]]


def chats(name: str) -> Iterator[tuple[str, list[Session]]]:
    """``(chat id, [(session time, messages)])`` of one data set."""
    if name in ("locomo", "social_chats"):
        from _data import load_locomo
        from context_bench import turn_messages
        convs = load_locomo() if name == "locomo" else load_locomo(ROOT / "data" / "social_chats.json")
        for conv in convs:
            yield conv["sample_id"], [(s["date_time"], turn_messages(s)) for s in conv["sessions"]]
        return
    data = json.loads((ROOT / "data" / f"{name}.json").read_text(encoding="utf-8"))
    for chat in data["conversations"]:
        yield chat["id"], [(s["date"], [{**m, "timestamp": s["date"]} for m in s["messages"]]) for s in chat["sessions"]]


def entity_names(sessions: list[Session]) -> dict[str, str]:
    """Distinct entity names of a chat → their type (the last one given)."""
    names: dict[str, str] = {}
    for when, messages in sessions:
        for cand in extract_entities_events({"messages": messages, "session_time": when}):
            if cand["category"] == "entities":
                names[cand["routing_key"]] = str(cand["metadata"].get("entity_type") or "")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default=DEFAULT_SETS, help="comma-separated data sets (add locomo for LoCoMo dev)")
    parser.add_argument("--labels", type=Path, default=ROOT / "data" / "entity_names_labelled.json")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args()
    found: dict[str, dict[str, str]] = {}
    for set_name in args.sets.split(","):
        for chat_id, sessions in chats(set_name.strip()):
            found[f"{set_name}/{chat_id}"] = entity_names(sessions)
            kinds = Counter(found[f"{set_name}/{chat_id}"].values())
            print(f"{set_name:22} {chat_id:14} {len(found[f'{set_name}/{chat_id}']):4} entity names  "
                  + ", ".join(f"{k or 'untyped'} {v}" for k, v in kinds.most_common()))
    sample = json.loads(args.labels.read_text(encoding="utf-8"))["sample"]
    scored = [row for row in sample if f"{row['set']}/{row['chat']}" in found]
    if scored:
        kept = [row for row in scored if row["name"] in found[f"{row['set']}/{row['chat']}"]]
        names = sum(row["name_label"] for row in scored)
        kept_names = sum(row["name_label"] for row in kept)
        print(f"labelled sample: {len(scored)} names made by main, {names} labelled names "
              f"(precision on main {names / len(scored):.3f})")
        print(f"this code keeps {len(kept)}: precision {kept_names / max(1, len(kept)):.3f}, "
              f"noise removed {len(scored) - names - (len(kept) - kept_names)} of {len(scored) - names}, "
              f"names lost {names - kept_names}: {[r['name'] for r in scored if r['name_label'] and r not in kept]}")
    if args.out_json:
        args.out_json.write_text(json.dumps(found, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

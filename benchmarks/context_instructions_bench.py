"""Standing instructions and preferences (issue 19 §1): precision and recall of the offline rules.

Run from the repository root::

    python benchmarks/context_instructions_bench.py [--show-errors] [--out-json FILE]

Data: ``benchmarks/data/context_instructions_labelled.json`` — 80 single user messages
(English and Chinese, half ``dev``, half ``held_out``) labelled ``instruction``,
``preference`` or ``none``. Each message goes through the preference extractor
(:func:`knowhub.providers.llm.local_context_rules.extract_preferences`, the task the commit
path runs); the message is *predicted* an instruction when a candidate has
``metadata.kind == "instruction"``, a preference when some other preference candidate
exists. Per class: precision = correct predictions / predictions, recall = labelled items
predicted. An instruction also counts as a preference memory (both are stored as
``preferences``), so the ``memory`` row scores "some preference-category memory written"
against ``label != none``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from knowhub.providers.llm.local_context_rules import extract_preferences

console = Console()
DATA = Path(__file__).resolve().parent / "data" / "context_instructions_labelled.json"


def predict(text: str) -> set[str]:
    """Classes the extractor writes for one user message."""
    out = extract_preferences({"messages": [{"id": "m1", "role": "user", "content": text,
                                             "timestamp": "2026-03-01T10:00:00Z"}]})
    kinds = {"instruction" if c["metadata"].get("kind") == "instruction" else "preference" for c in out}
    if kinds:
        kinds.add("memory")
    return kinds


def score(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for cls in ("instruction", "preference", "memory"):
        def gold(item: dict[str, Any], cls: str = cls) -> bool:
            return item["label"] != "none" if cls == "memory" else item["label"] == cls
        predicted = [i for i in items if cls in i["predicted"]]
        hits = sum(1 for i in predicted if gold(i))
        labelled = sum(1 for i in items if gold(i))
        p = hits / len(predicted) if predicted else 1.0
        r = sum(1 for i in items if gold(i) and cls in i["predicted"]) / labelled if labelled else 1.0
        out[cls] = {"precision": round(p, 3), "recall": round(r, 3), "predicted": len(predicted), "gold": labelled}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show-errors", action="store_true")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args()
    items = json.loads(DATA.read_text(encoding="utf-8"))["items"]
    for item in items:
        item["predicted"] = sorted(predict(item["text"]))
    report: dict[str, Any] = {}
    table = Table(title="standing instructions and preferences (offline rules)")
    for col in ("group", "class", "precision", "recall", "predicted", "gold"):
        table.add_column(col)
    for split in ("dev", "held_out"):
        for lang in ("all", "en", "zh"):
            group = [i for i in items if i["split"] == split and lang in ("all", i["lang"])]
            name = split if lang == "all" else f"{split}/{lang}"
            report[name] = score(group)
            for cls, row in report[name].items():
                table.add_row(name, cls, *(str(row[k]) for k in ("precision", "recall", "predicted", "gold")))
    console.print(table)
    if args.show_errors:
        for item in items:
            want = {item["label"]} - {"none"}
            got = set(item["predicted"]) - {"memory"}
            if (item["label"] == "instruction" and "instruction" not in got) or (item["label"] != "instruction" and "instruction" in got) \
                    or (item["label"] == "preference" and "preference" not in got) or (item["label"] == "none" and got):
                console.print(f"{item['id']} label={item['label']} predicted={sorted(got) or '-'} want={sorted(want)}: {item['text']}")
    if args.out_json:
        args.out_json.write_text(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Cold open of a KeywordTree (issue 20 §4): this engine against another checkout, one run.

Run from the repository root::

    python benchmarks/tree_open_bench.py --before-src /path/to/old/checkout/src
    python benchmarks/tree_open_bench.py --sizes icd --repeat 3 --before-src ../main/src

Per size (``icd`` = full ICD-10-CM, 98,581 nodes; ``1000000`` = ``synthetic_expand`` of
it, as in ``tree_bench.py``) the tree is imported once with this engine and closed. Then
each measurement is a fresh process (files in the page cache; "cold" means a cold
process), timed around ``KeywordTree(data_dir)`` (wall and CPU seconds, RSS growth), that
then runs ``search(name, use_agent=False)`` on the same random existing names and reports
the p50/p99 per call (``time.perf_counter_ns``):

* **after, image**: this engine, opening from its state image (``indexes/state.img``);
* **after, from JSONL**: this engine on a copy without the image (it rebuilds from the
  JSONL files, then writes a new image: the time includes that write);
* **after, image + tail**: this engine after another process appended ``--tail`` single
  writes without closing (the image is older than the log; the tail is replayed);
* **before, persisted indexes** and **before, from JSONL**: the engine at
  ``--before-src`` on a copy of the same files, with the per-map JSON indexes its own
  ``close()`` wrote, and without them.

The fastest of ``--repeat`` opens (``--repeat-large`` above 200k nodes) is reported (the
machine is shared), with every run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BENCH_DIR, ICD_FILE, bfs_subset, load_icd10cm, synthetic_expand

SRC = Path(__file__).resolve().parents[1] / "src"

OPEN = r"""
import gc, json, os, sys, time
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
from knowhub.tree import KeywordTree, StubLLMClient
names = json.loads(open(sys.argv[2]).read())
gc.collect()
r0 = rss()
c0, t0 = time.process_time(), time.perf_counter()
tree = KeywordTree(sys.argv[1], llm_client=StubLLMClient())
t1, c1 = time.perf_counter(), time.process_time()
r1 = rss()
for name in names[:200]:
    tree.search(name, use_agent=False)
lat = []
for name in names:
    s = time.perf_counter_ns()
    tree.search(name, use_agent=False)
    lat.append((time.perf_counter_ns() - s) / 1000)
lat.sort()
print(json.dumps({"seconds": t1 - t0, "cpu_seconds": c1 - c0, "rss_delta": r1 - r0, "nodes": len(tree) - 1,
                  "p50_us": lat[len(lat) // 2], "p99_us": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
                  "load": {k: v for k, v in tree.load_report.items() if k != "repaired_bytes"}}))
sys.stdout.flush()
os._exit(0)  # no close(): leave the directory as it was
"""

BUILD = r"""
import json, sys
from knowhub.tree import KeywordTree, StubLLMClient
specs = json.loads(open(sys.argv[2]).read())
tree = KeywordTree(sys.argv[1], llm_client=StubLLMClient())
for start in range(0, len(specs), 50000):
    tree.batch_create_keywords(specs[start:start + 50000])
tree.close()
"""

CLOSE = r"""
import sys
from knowhub.tree import KeywordTree, StubLLMClient
KeywordTree(sys.argv[1], llm_client=StubLLMClient()).close()
"""

TAIL = r"""
import os, sys
from knowhub.tree import KeywordTree, StubLLMClient
tree = KeywordTree(sys.argv[1], llm_client=StubLLMClient())
for i in range(int(sys.argv[2])):
    tree.create_keyword(f"tail write {i}", llm_auto_place=False, dedup=False)
os._exit(0)  # dies without close(): the image stays older than the log
"""


def child(src: Path, script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, timeout=3600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return proc.stdout


def opens(src: Path, data: Path, names: Path, repeat: int, fresh: Path | None = None) -> dict[str, Any]:
    """Best of ``repeat`` cold opens; with ``fresh``, each open gets a new copy of it."""
    runs = []
    for _ in range(repeat):
        if fresh is not None:
            shutil.rmtree(data, ignore_errors=True)
            shutil.copytree(fresh, data)
        runs.append(json.loads(child(src, OPEN, str(data), str(names)).strip().splitlines()[-1]))
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "all_seconds": [round(r["seconds"], 2) for r in runs]}


def measure(label: str, nodes: list[dict[str, Any]], args: argparse.Namespace, work: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    repeat = args.repeat if len(nodes) <= 200_000 else args.repeat_large
    specs = [{"id": n["id"], "name": n["name"], "parent_id": n["parent_id"] or "root", "aliases": [n["code"]] if n.get("code") else []}
             for n in nodes]
    names = work / "names.json"
    names.write_text(json.dumps([rng.choice(nodes)["name"] for _ in range(args.queries)]))
    spec_file = work / "specs.json"
    spec_file.write_text(json.dumps(specs))
    tree = work / f"tree-{label}"
    started = time.perf_counter()
    child(SRC, BUILD, str(tree), str(spec_file))
    out: dict[str, Any] = {"size": label, "nodes": len(nodes), "import_s": time.perf_counter() - started}
    print(f"[{label}] imported in {out['import_s']:.0f}s", flush=True)
    pristine = work / f"pristine-{label}"  # with the image this engine's close() wrote
    shutil.copytree(tree, pristine)
    out["after_image"] = opens(SRC, tree, names, repeat)
    print(f"[{label}] after, image: {out['after_image']['all_seconds']}", flush=True)
    no_image = work / f"noimage-{label}"
    shutil.copytree(pristine, no_image)
    (no_image / "indexes" / "state.img").unlink()
    out["after_jsonl"] = opens(SRC, work / f"jsonl-{label}", names, repeat, fresh=no_image)
    print(f"[{label}] after, from JSONL: {out['after_jsonl']['all_seconds']}", flush=True)
    if args.tail:
        tailed = work / f"tail-{label}"
        shutil.copytree(pristine, tailed)
        child(SRC, TAIL, str(tailed), str(args.tail))
        out["after_tail"] = opens(SRC, work / f"tail-run-{label}", names, repeat, fresh=tailed)
        print(f"[{label}] after, image + {args.tail} tail writes: {out['after_tail']['all_seconds']}", flush=True)
        shutil.rmtree(tailed)
    if args.before_src:
        before = Path(args.before_src)
        old = work / f"before-{label}"
        shutil.copytree(pristine, old)
        (old / "indexes" / "state.img").unlink()
        child(before, CLOSE, str(old))  # the old engine writes its own persisted indexes
        out["before_indexes"] = opens(before, old, names, repeat)
        print(f"[{label}] before, persisted indexes: {out['before_indexes']['all_seconds']}", flush=True)
        for path in (old / "indexes").glob("*.json"):
            path.unlink()
        out["before_jsonl"] = opens(before, old, names, repeat)
        print(f"[{label}] before, from JSONL: {out['before_jsonl']['all_seconds']}", flush=True)
        shutil.rmtree(old)
    out["image_mb"] = (pristine / "indexes" / "state.img").stat().st_size / 1e6
    for path in (tree, pristine, no_image, work / f"jsonl-{label}"):
        shutil.rmtree(path, ignore_errors=True)
    return out


def report(results: list[dict[str, Any]], env: dict[str, Any]) -> str:
    rows = [
        ("after: open from the state image, s", "after_image", "seconds"),
        ("after: open from the state image, CPU s", "after_image", "cpu_seconds"),
        ("after: image + tail writes, s", "after_tail", "seconds"),
        ("after: open from JSONL (+ writing the image), s", "after_jsonl", "seconds"),
        ("before: open with persisted indexes, s", "before_indexes", "seconds"),
        ("before: open with persisted indexes, CPU s", "before_indexes", "cpu_seconds"),
        ("before: open from JSONL, s", "before_jsonl", "seconds"),
        ("after: exact search p50 / p99, µs", "after_image", "p50_us"),
        ("before: exact search p50 / p99, µs", "before_indexes", "p50_us"),
        ("after: RSS per node (image), bytes", "after_image", "rss_delta"),
        ("before: RSS per node (indexes), bytes", "before_indexes", "rss_delta"),
    ]
    lines = ["| metric | " + " | ".join(f"{r['size']} ({r['nodes']:,} nodes)" for r in results) + " |",
             "|---|" + "---:|" * len(results)]
    for title, key, field in rows:
        cells = []
        for r in results:
            m = r.get(key)
            if not m:
                cells.append("–")
            elif field == "p50_us":
                cells.append(f"{m['p50_us']:.1f} / {m['p99_us']:.1f}")
            elif field == "rss_delta":
                cells.append(f"{m['rss_delta'] / max(1, m['nodes']):,.0f}")
            else:
                cells.append(f"{m[field]:.2f}")
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines.append("| state image size, MB | " + " | ".join(f"{r['image_mb']:.0f}" for r in results) + " |")
    head = (f"{env['date_utc']}, {env['cpus']} CPUs, Python {env['python']}, load average at start "
            f"{env['loadavg_start']}, at end {env['loadavg_end']}")
    return head + "\n\n" + "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="icd,1000000")
    ap.add_argument("--repeat", type=int, default=3, help="opens per measurement (the fastest is reported)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--tail", type=int, default=200, help="single writes after the image (0: skip)")
    ap.add_argument("--before-src", default="", help="src/ of the engine to compare with")
    ap.add_argument("--repeat-large", type=int, default=1, help="opens per measurement above 200k nodes")
    ap.add_argument("--seed", type=int, default=20261121, help="as tree_bench.py: synthetic_expand and the queries")
    ap.add_argument("--icd", default=str(BENCH_DIR / ICD_FILE), help="ICD-10-CM tabular XML")
    ap.add_argument("--out-json", default="")
    args = ap.parse_args()
    env = {"cpus": os.cpu_count(), "python": sys.version.split()[0],
           "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg_start": os.getloadavg()}
    icd = load_icd10cm(args.icd)
    results = []
    with tempfile.TemporaryDirectory(prefix="tree-open-") as tmp:
        for size in args.sizes.split(","):
            if size == "icd":
                label, nodes = "icd", icd
            else:
                n = int(size)
                label = f"{n // 1000}k" if n < 1_000_000 else f"{n / 1e6:g}M"
                nodes = bfs_subset(icd, n) if n <= len(icd) else synthetic_expand(icd, n, seed=args.seed)
            results.append(measure(label, nodes, args, Path(tmp)))
    env["loadavg_end"] = os.getloadavg()
    print(report(results, env))
    if args.out_json:
        Path(args.out_json).write_text(json.dumps({"env": env, "results": results}, indent=2))


if __name__ == "__main__":
    main()

"""KeywordTree benchmark on real data (ICD-10-CM) and a synthetic 1M-node expansion.

Run from the repository root::

    python benchmarks/tree_bench.py                 # 10k, full ICD-10-CM (~98.6k), 1M
    python benchmarks/tree_bench.py --quick         # small smoke run
    python benchmarks/tree_bench.py --sizes icd --queries 500 --out-json out.json

Per size: bulk import (``batch_create_keywords`` in chunks), cold open in a fresh process
from the JSONL files alone (``indexes/`` deleted) and with the persisted state image
(``indexes/state.img``; ``tree_open_bench.py`` compares it with another engine), RSS per
node, exact-search latency (``search(name, use_agent=False)`` on random existing names,
``time.perf_counter_ns``), durable single writes (``create_keyword`` with an explicit
parent; each one is acknowledged after an fsync) and the disk's own fsync cost.

On the full ICD-10-CM tree only:

* descent efficiency with an ORACLE agent that knows the target and answers each
  ``pick_branch`` optimally (``match`` the target when shown, else ``jump`` to the deepest
  shown ancestor, else ``missing``), with queries that miss the exact index; compared with
  two baselines computed on the same targets: the whole tree in one prompt, and one level
  per round;
* accuracy of the default offline ``LocalAgent`` on ICD-10-CM inclusion terms.

The oracle recognizes a candidate from what the prompt shows (seed 001: no ids in the
prompt): the name plus either ``parent_idx`` (the parent is another candidate, recognized
the same way), or ``path`` (the nearest ancestor names, each possibly cut with ``…``, a
leading ``… > `` when far ancestors are left out), or neither (a top-level node). The
engine exposes no idx→id map, and reading its internals would test the benchmark rather
than the prompt. The two baselines render candidates the way the engine does
(``parent_idx`` when the parent is listed, else a short path), so that tokens compare.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import BENCH_DIR, ICD_FILE, bfs_subset, load_icd10cm, synthetic_expand

from knowhub.providers.llm import (
    LLMClient,
    LocalAgent,
    StubLLMClient,
    build_task_messages,
    estimate_tokens,
    parse_task_message,
)
from knowhub.tree import ROOT_ID, KeywordTree, SearchStatus
from knowhub.tree import descent as _descent
from knowhub.tree.agent_tasks import INSTRUCTIONS, SCHEMAS

#: How the engine cuts candidate paths (read from the engine, with its documented defaults).
PATH_WIDTH = int(getattr(_descent, "PATH_WIDTH", 20))
PATH_DEPTH = int(getattr(_descent, "PATH_DEPTH", 3))
TARGETS = {
    "exact_p50_us": 20.0,
    "exact_p99_us": 100.0,
    "single_writes_per_s": 1000.0,
    "batch_nodes_per_s": 50000.0,
    "descent_rounds": 2.0,
    "descent_tokens": 3000.0,
}

COLD_OPEN = r"""
import gc, json, os, sys, time
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
from knowhub.tree import KeywordTree, StubLLMClient
gc.collect()
r0 = rss()
t0 = time.perf_counter()
tree = KeywordTree(sys.argv[1], llm_client=StubLLMClient())
t1 = time.perf_counter()
gc.collect()
r1 = rss()
print(json.dumps({"seconds": t1 - t0, "rss_delta": r1 - r0, "nodes": len(tree) - 1, "load": tree.load_report}))
sys.stdout.flush()
os._exit(0)  # no close(): leave the directory exactly as it was
"""


# -- helpers ---------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100])."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def cut(name: str) -> str:
    return name if len(name) <= PATH_WIDTH else name[: PATH_WIDTH - 1] + "…"


def _part_matches(part: str, name: str) -> bool:
    return part == name or (part.endswith("…") and name.startswith(part[:-1]))


class TreeIndex:
    """Ancestors, children and prompt rendering of the loader's node list (not the engine's)."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.by_id = {n["id"]: n for n in nodes}
        self.children: dict[str, list[str]] = {}
        for n in nodes:
            self.children.setdefault(n["parent_id"] or ROOT_ID, []).append(n["id"])

    def chain(self, node_id: str) -> list[str]:
        """Ids from the top-level ancestor down to ``node_id``."""
        out = []
        current: str | None = node_id
        while current is not None:
            out.append(current)
            current = self.by_id[current]["parent_id"]
        return out[::-1]

    def path(self, node_id: str) -> str:
        """The engine's short path: nearest ``PATH_DEPTH`` ancestor names, each cut."""
        names = [cut(self.by_id[a]["name"]) for a in self.chain(node_id)[:-1]]
        if len(names) > PATH_DEPTH:
            return "… > " + " > ".join(names[-PATH_DEPTH:])
        return " > ".join(names)

    def render(self, ids: list[str]) -> list[dict[str, Any]]:
        """Candidates as the engine renders them: parent_idx when listed, else path."""
        index = {node_id: i for i, node_id in enumerate(ids)}
        out = []
        for i, node_id in enumerate(ids):
            node = self.by_id[node_id]
            cand: dict[str, Any] = {"idx": i, "name": node["name"]}
            if node["parent_id"] in index:
                cand["parent_idx"] = index[node["parent_id"]]
            elif node["parent_id"] is not None:
                cand["path"] = self.path(node_id)
            if self.children.get(node_id):
                cand["has_children"] = True
            out.append(cand)
        return out

    def matches(self, cand: dict[str, Any], node_id: str, by_idx: dict[int, dict[str, Any]], depth: int = 0) -> bool:
        """Whether a prompt candidate shows ``node_id`` (name + parent_idx / path / top level)."""
        node = self.by_id[node_id]
        if cand.get("name") != node["name"] or depth > 64:
            return False
        parent = node["parent_id"]
        if "parent_idx" in cand:
            shown_parent = by_idx.get(cand["parent_idx"])
            return parent is not None and shown_parent is not None and self.matches(shown_parent, parent, by_idx, depth + 1)
        if cand.get("path"):
            parts = str(cand["path"]).split(" > ")
            names = [self.by_id[a]["name"] for a in self.chain(node_id)[:-1]]
            if parts[0] == "…":
                parts = parts[1:]
                if len(parts) > len(names):
                    return False
                names = names[len(names) - len(parts) :]
            return len(parts) == len(names) and all(_part_matches(p, n) for p, n in zip(parts, names, strict=True))
        return parent is None


def specs_of(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Engine specs: ICD ids kept, description as name, code as alias."""
    return [
        {"id": n["id"], "name": n["name"], "parent_id": n["parent_id"] or ROOT_ID, "aliases": [n["code"]] if n.get("code") else []}
        for n in nodes
    ]


def fsync_cost(directory: Path, rounds: int = 200) -> dict[str, float]:
    """Mean and p50 of append-256-bytes + fsync on the benchmark's disk (microseconds)."""
    path = directory / "fsync-probe.bin"
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            os.write(fd, b"x" * 255 + b"\n")
            os.fsync(fd)
            times.append((time.perf_counter_ns() - t0) / 1000)
    finally:
        os.close(fd)
        path.unlink()
    return {"fsync_mean_us": statistics.fmean(times), "fsync_p50_us": pct(times, 50), "fsyncs_per_s": 1e6 / statistics.fmean(times)}


def cold_open(directory: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", COLD_OPEN, str(directory)], capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"cold open failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- oracle ----------------------------------------------------------------------------


class OracleAgent(LLMClient):
    """Answers ``pick_branch`` optimally for a known target (see the module docstring)."""

    def __init__(self, index: TreeIndex) -> None:
        self.index = index
        self.target: str | None = None
        self.chain: list[str] = []
        self.target_shown = False

    def set_target(self, node_id: str) -> None:
        self.target = node_id
        self.chain = self.index.chain(node_id)
        self.target_shown = False

    def find(self, cands: list[dict[str, Any]], node_id: str) -> int | None:
        by_idx = {c["idx"]: c for c in cands}
        for cand in cands:
            if self.index.matches(cand, node_id, by_idx):
                return cand["idx"]
        return None

    def Chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        task, payload = parse_task_message(messages)
        if task != "pick_branch":
            return {"action": "create_new", "target": None, "links": [], "reason": "oracle answers pick_branch only"}
        cands = payload.get("candidates", [])
        for depth, node_id in enumerate(reversed(self.chain)):  # the target first, then ancestors deepest first
            idx = self.find(cands, node_id)
            if idx is not None:
                if depth == 0:
                    self.target_shown = True
                    return {"action": "match", "node_id": idx, "reason": "target shown"}
                return {"action": "jump", "node_id": idx, "reason": "deepest shown ancestor"}
        return {"action": "missing", "reason": "neither target nor an ancestor shown"}


class RecordingLocalAgent(LocalAgent):
    """The default LocalAgent, keeping each round's candidates to check what it was shown."""

    def __init__(self) -> None:
        super().__init__()
        self.rounds: list[list[dict[str, Any]]] = []

    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        task, payload = parse_task_message(messages)
        if task == "pick_branch":
            self.rounds.append(list(payload.get("candidates", [])))
        return super().chat(messages, json_schema)

    def was_shown(self, index: TreeIndex, node_id: str) -> bool:
        for cands in self.rounds:
            by_idx = {c["idx"]: c for c in cands}
            if any(index.matches(c, node_id, by_idx) for c in cands):
                return True
        return False


def pick_messages(query: str, path: list[str], candidates: list[dict[str, Any]]) -> int:
    """Prompt tokens of one pick_branch call with these candidates (the engine's wording)."""
    payload = {"intent": "search", "query": query, "path": path, "candidates": candidates}
    messages = build_task_messages("pick_branch", INSTRUCTIONS["pick_branch"], payload, SCHEMAS["pick_branch"])
    return sum(estimate_tokens(m["content"]) for m in messages)


def descent_queries(
    tree: KeywordTree, index: TreeIndex, rng: random.Random, n: int, *, synonym_only: bool = False
) -> list[tuple[str, str, str]]:
    """``(target_id, query, kind)``: a synonym of the target that misses the exact index,
    else the name with its words reordered (``synonym_only``: targets with a usable
    synonym only); targets whose every query still hits exactly are skipped."""
    ids = [i for i, node in index.by_id.items() if node["synonyms"]] if synonym_only else list(index.by_id)
    out: list[tuple[str, str, str]] = []
    tries = 0
    while len(out) < n and tries < n * 20:
        tries += 1
        target = rng.choice(ids)
        if any(t == target for t, _, _ in out):
            continue
        node = index.by_id[target]
        choices = [(s, "synonym") for s in node["synonyms"]]
        words = node["name"].replace(",", " ").split()
        if len(words) >= 2 and not synonym_only:
            choices.append((" ".join(words[len(words) // 2 :] + words[: len(words) // 2]), "reordered"))
        for query, kind in choices:
            if tree.search(query, use_agent=False).status is SearchStatus.NOT_FOUND:
                out.append((target, query, kind))
                break
    return out


def accuracy_queries(tree: KeywordTree, index: TreeIndex, n: int, seed: int) -> list[tuple[str, str]]:
    """``(target_id, inclusion term)`` pairs whose term misses the exact index."""
    pool = [(nid, s) for nid, node in index.by_id.items() for s in node["synonyms"] if s != node["name"]]
    random.Random(seed).shuffle(pool)
    out = []
    for target, query in pool:
        if len(out) >= n:
            break
        if tree.search(query, use_agent=False).status is SearchStatus.NOT_FOUND:
            out.append((target, query))
    return out


def whole_tree_tokens(nodes: list[dict[str, Any]], index: TreeIndex, query: str) -> int:
    """Baseline (a): every node as a candidate in one prompt (engine rendering)."""
    return pick_messages(query, [], index.render([n["id"] for n in nodes]))


def level_baseline(index: TreeIndex, target: str, query: str) -> tuple[int, int]:
    """Baseline (b): each round shows only the children of the current node."""
    total = 0
    parent = ROOT_ID
    walked: list[str] = []
    chain = index.chain(target)
    for step in chain:
        total += pick_messages(query, walked, index.render(index.children.get(parent, [])))
        walked.append(index.by_id[step]["name"])
        parent = step
    return len(chain), total


def run_descent(tree_dir: Path, index: TreeIndex, queries: list[tuple[str, str, str]], max_candidates: int, whole_tokens: int) -> dict[str, Any]:
    """Oracle descent over the targets of ``queries`` plus baseline (b) on the same targets."""
    oracle = OracleAgent(index)
    tree = KeywordTree(tree_dir, llm_client=oracle, max_candidates=max_candidates)
    tree.clear_caches()  # persisted descend/decision caches of an earlier run would answer for free
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        for target, query, kind in queries:
            oracle.set_target(target)
            before = oracle.usage.as_dict()
            result = tree.search(query)
            after = oracle.usage.as_dict()
            good = result.status is SearchStatus.MATCHED and result.node is not None and result.node.id == target
            level_rounds, level_tokens = level_baseline(index, target, query)
            rows.append(
                {
                    "kind": kind,
                    "rounds": after["calls"] - before["calls"],
                    "tokens": after["prompt_tokens"] - before["prompt_tokens"],
                    "ok": good,
                    "shown": oracle.target_shown,
                    "status": result.status.value if good or result.status is not SearchStatus.MATCHED else "matched_wrong",
                    "level_rounds": level_rounds,
                    "level_tokens": level_tokens,
                }
            )
    finally:
        seconds = time.perf_counter() - started
        tree.close()
    n = max(1, len(rows))
    return {
        "max_candidates": max_candidates,
        "searches": len(rows),
        "query_kinds": dict(Counter(r["kind"] for r in rows)),
        "success_rate": sum(r["ok"] for r in rows) / n,
        "target_shown_rate": sum(r["shown"] for r in rows) / n,
        "outcomes": dict(Counter(r["status"] for r in rows)),
        "mean_rounds": statistics.fmean(r["rounds"] for r in rows) if rows else 0.0,
        "rounds_distribution": dict(sorted(Counter(r["rounds"] for r in rows).items())),
        "mean_prompt_tokens": statistics.fmean(r["tokens"] for r in rows) if rows else 0.0,
        "p90_prompt_tokens": pct([float(r["tokens"]) for r in rows], 90),
        "engine_ms_per_search": seconds / n * 1000,
        "baseline_whole_tree_tokens": whole_tokens,
        "baseline_level_mean_rounds": statistics.fmean(r["level_rounds"] for r in rows) if rows else 0.0,
        "baseline_level_mean_tokens": statistics.fmean(r["level_tokens"] for r in rows) if rows else 0.0,
    }


def run_local_accuracy(tree_dir: Path, index: TreeIndex, queries: list[tuple[str, str]]) -> dict[str, Any]:
    """Top-1 accuracy of search() with the default LocalAgent on ICD inclusion terms."""
    agent = RecordingLocalAgent()
    tree = KeywordTree(tree_dir, llm_client=agent)
    tree.clear_caches()
    counts: Counter[str] = Counter()
    cands_hit = shown_hit = ancestor = rounds = 0
    started = time.perf_counter()
    try:
        for target, query in queries:
            agent.rounds.clear()
            calls = agent.usage.calls
            result = tree.search(query)
            rounds += agent.usage.calls - calls
            if result.status is SearchStatus.MATCHED and result.node is not None:
                if result.node.id == target:
                    counts["correct"] += 1
                else:
                    counts["matched_wrong"] += 1
                    ancestor += result.node.id in index.chain(target)
            else:
                counts[result.status.value] += 1
            returned = {c.id for c in result.candidates} | ({result.node.id} if result.node else set())
            cands_hit += target in returned
            shown_hit += agent.was_shown(index, target)
    finally:
        seconds = time.perf_counter() - started
        tree.close()
    done = max(1, len(queries))
    return {
        "queries": len(queries),
        "top1": counts["correct"] / done,
        "matched_wrong": counts["matched_wrong"] / done,
        "matched_ancestor": ancestor / done,
        "ambiguous": counts["ambiguous"] / done,
        "not_found": counts["not_found"] / done,
        "target_in_returned": cands_hit / done,
        "target_shown_to_agent": shown_hit / done,
        "mean_rounds": rounds / done,
        "ms_per_search": seconds / done * 1000,
    }


# -- per-size measurements ---------------------------------------------------------------


def best_cold_open(tree_dir: Path, repeat: int, nodes: int) -> dict[str, Any]:
    """The fastest of ``repeat`` cold opens (the machine is shared; the minimum is the
    least disturbed run), with the RSS of that run; one open only above 200k nodes."""
    runs = [cold_open(tree_dir) for _ in range(max(1, repeat if nodes <= 200_000 else 1))]
    return min(runs, key=lambda r: r["seconds"])


def measure_size(label: str, nodes: list[dict[str, Any]], args: argparse.Namespace, work: Path, console: Console) -> dict[str, Any]:
    """Import, search, write and reopen one tree of ``nodes``; descent phases on ICD."""
    tag = escape(f"[{label}]")
    tree_dir = work / f"tree-{label}"
    out: dict[str, Any] = {"size": label, "nodes": len(nodes)}
    rng = random.Random(args.seed)
    tree = KeywordTree(tree_dir, llm_client=StubLLMClient())
    try:
        console.log(f"{tag} importing {len(nodes):,} nodes in chunks of {args.chunk:,}")
        started = time.perf_counter()
        next_report = 15.0
        for start in range(0, len(nodes), args.chunk):
            tree.batch_create_keywords(specs_of(nodes[start : start + args.chunk]))
            elapsed = time.perf_counter() - started
            if elapsed >= next_report:
                console.log(f"{tag}   {min(len(nodes), start + args.chunk):,}/{len(nodes):,} nodes, {elapsed:.0f}s")
                next_report = elapsed + 15
        out["import_s"] = time.perf_counter() - started
        out["batch_nodes_per_s"] = len(nodes) / out["import_s"]
        console.log(f"{tag} imported in {out['import_s']:.1f}s ({out['batch_nodes_per_s']:,.0f} nodes/s)")

        names = [rng.choice(nodes)["name"] for _ in range(args.queries)]
        for name in (rng.choice(nodes)["name"] for _ in range(200)):  # warm-up
            tree.search(name, use_agent=False)
        statuses: Counter[str] = Counter()
        first, repeat, norm = [], [], []
        for name in names:
            t0 = time.perf_counter_ns()
            result = tree.search(name, use_agent=False)
            first.append((time.perf_counter_ns() - t0) / 1000)
            statuses[result.status.value] += 1
        for name in names:
            t0 = time.perf_counter_ns()
            tree.search(name, use_agent=False)
            repeat.append((time.perf_counter_ns() - t0) / 1000)
        for name in names:
            t0 = time.perf_counter_ns()
            tree.normalizer.keys(name)
            norm.append((time.perf_counter_ns() - t0) / 1000)
        out.update(
            exact_p50_us=pct(first, 50), exact_p99_us=pct(first, 99),
            exact_repeat_p50_us=pct(repeat, 50), exact_repeat_p99_us=pct(repeat, 99),
            normalize_p50_us=pct(norm, 50), exact_statuses=dict(statuses),
        )
        console.log(f"{tag} exact search p50 {out['exact_p50_us']:.1f} µs, p99 {out['exact_p99_us']:.1f} µs")

        parents = [rng.choice(nodes)["id"] for _ in range(args.writes)]
        lat = []
        started = time.perf_counter()
        for i, parent in enumerate(parents):
            t0 = time.perf_counter_ns()
            tree.create_keyword(f"bench write {label} {i}", parent_id=parent, llm_auto_place=False)
            lat.append((time.perf_counter_ns() - t0) / 1e6)
        out["single_writes_per_s"] = len(parents) / (time.perf_counter() - started)
        out["single_write_p50_ms"] = pct(lat, 50)
        out["single_write_p99_ms"] = pct(lat, 99)
        console.log(f"{tag} durable single writes {out['single_writes_per_s']:.0f}/s")

        index = None
        if label == "icd":
            index = TreeIndex(nodes)
            query_sets = {
                "random targets": descent_queries(tree, index, random.Random(args.seed + 1), args.descent_targets),
                "targets with inclusion terms": descent_queries(tree, index, random.Random(args.seed + 3), args.descent_targets, synonym_only=True),
            }
            a_queries = accuracy_queries(tree, index, args.accuracy_queries, args.seed + 2)
    finally:
        tree.close()
    del tree
    gc.collect()

    persisted = best_cold_open(tree_dir, args.repeat, len(nodes))
    out["open_indexes_s"] = persisted["seconds"]
    out["open_adopted_indexes"] = persisted["load"].get("adopted_persisted_indexes")
    out["rss_bytes_per_node"] = persisted["rss_delta"] / max(1, persisted["nodes"])
    console.log(f"{tag} cold open with indexes {out['open_indexes_s']:.2f}s, {out['rss_bytes_per_node']:,.0f} B/node")

    if index is not None and query_sets["random targets"]:  # --descent-targets 0 skips the agent phases
        whole = whole_tree_tokens(nodes, index, query_sets["random targets"][0][1])
        out["descent"] = []
        for mc in args.max_candidates:
            for set_name, queries in query_sets.items():
                console.log(f"{tag} oracle descent, {set_name}: {len(queries)} searches, max_candidates={mc}")
                res = run_descent(tree_dir, index, queries, mc, whole)
                res["query_set"] = set_name
                out["descent"].append(res)
                console.log(f"{tag}   rounds {res['mean_rounds']:.2f}, tokens {res['mean_prompt_tokens']:,.0f}, success {res['success_rate']:.1%}, {res['engine_ms_per_search']:.0f} ms/search")
        console.log(f"{tag} LocalAgent accuracy over {len(a_queries)} inclusion terms")
        out["local_agent"] = run_local_accuracy(tree_dir, index, a_queries)
        console.log(f"{tag}   top-1 {out['local_agent']['top1']:.1%}")

    shutil.rmtree(tree_dir / "indexes", ignore_errors=True)
    from_jsonl = best_cold_open(tree_dir, args.repeat, len(nodes))
    out["open_jsonl_s"] = from_jsonl["seconds"]
    out["open_jsonl_rss_bytes_per_node"] = from_jsonl["rss_delta"] / max(1, from_jsonl["nodes"])
    out["disk_bytes"] = sum(p.stat().st_size for p in tree_dir.rglob("*") if p.is_file())
    console.log(f"{tag} cold open from JSONL {out['open_jsonl_s']:.2f}s, {out['open_jsonl_rss_bytes_per_node']:,.0f} B/node")
    if not args.keep:
        shutil.rmtree(tree_dir, ignore_errors=True)
    return out


def mem_available() -> int:
    """MemAvailable from /proc/meminfo in bytes (0 when unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def nodes_for(size: str, icd: list[dict[str, Any]], seed: int) -> tuple[str, list[dict[str, Any]]]:
    if size == "icd":
        return "icd", icd
    n = int(size)
    label = f"{n // 1000}k" if n < 1_000_000 else f"{n / 1e6:g}M"
    return label, (bfs_subset(icd, n) if n <= len(icd) else synthetic_expand(icd, n, seed=seed))


# -- report ------------------------------------------------------------------------------


def mark(value: float, target: float, higher_is_better: bool) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "[green]met[/]" if ok else "[red]missed[/]"


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout.splitlines():
            if line.startswith("Model name"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        model = "?"
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": sys.version.split()[0],
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "loadavg_start": os.getloadavg(),
        "mem_available_gib": round(mem_available() / 2**30, 1),
    }


def print_report(results: list[dict[str, Any]], env: dict[str, Any], console: Console) -> None:
    table = Table(title="KeywordTree performance")
    table.add_column("metric")
    for r in results:
        table.add_column(f"{r['size']} ({r['nodes']:,})", justify="right")
    table.add_column("target")
    rows: list[tuple[str, str, str, Any]] = [
        ("bulk import s", "import_s", "{:.1f}", ""),
        ("batch nodes/s", "batch_nodes_per_s", "{:,.0f}", ("≥ 50,000", TARGETS["batch_nodes_per_s"], True)),
        ("cold open from JSONL s", "open_jsonl_s", "{:.2f}", ""),
        ("cold open with indexes s", "open_indexes_s", "{:.2f}", ""),
        ("RSS bytes/node (open with indexes)", "rss_bytes_per_node", "{:,.0f}", ""),
        ("RSS bytes/node (open from JSONL)", "open_jsonl_rss_bytes_per_node", "{:,.0f}", ""),
        ("disk bytes/node", "disk_bytes_per_node", "{:,.0f}", ""),
        ("exact search p50 µs", "exact_p50_us", "{:.1f}", ("≤ 20", TARGETS["exact_p50_us"], False)),
        ("exact search p99 µs", "exact_p99_us", "{:.1f}", ("≤ 100", TARGETS["exact_p99_us"], False)),
        ("exact repeat p50 / p99 µs", "exact_repeat", "{}", ""),
        ("normalize only p50 µs", "normalize_p50_us", "{:.1f}", ""),
        ("durable single writes/s", "single_writes_per_s", "{:,.0f}", ("≥ 1,000", TARGETS["single_writes_per_s"], True)),
        ("single write p50 / p99 ms", "single_write", "{}", ""),
    ]
    for r in results:
        r["disk_bytes_per_node"] = r["disk_bytes"] / max(1, r["nodes"])
        r["exact_repeat"] = f"{r['exact_repeat_p50_us']:.1f} / {r['exact_repeat_p99_us']:.1f}"
        r["single_write"] = f"{r['single_write_p50_ms']:.2f} / {r['single_write_p99_ms']:.2f}"
    for title, key, fmt, target in rows:
        cells = []
        for r in results:
            value = r[key]
            cell = fmt.format(value)
            if target:
                cell += " " + mark(value, target[1], target[2])
            cells.append(cell)
        table.add_row(title, *cells, target[0] if target else "")
    console.print(table)
    load = ", ".join(f"{x:.1f}" for x in env.get("loadavg_start", ()))
    console.print(
        f"machine: {env['cpus']} CPUs, {env['cpu_model']}, Python {env['python']}; disk append+fsync "
        f"{env['fsync_mean_us']:,.0f} µs mean ({env['fsyncs_per_s']:,.0f} fsyncs/s); load average at start {load}; "
        f"{env.get('mem_available_gib')} GiB memory available; {env['date_utc']}"
    )
    for key in ("skipped", "reduced", "failed"):
        if env.get(key):
            console.print(f"{key}: {'; '.join(map(str, env[key]))}")
    for r in results:
        descent = r.get("descent", [])
        if descent:
            t = Table(title="Descent on ICD-10-CM with an oracle agent (queries miss the exact index)")
            for col in ("query set", "max cand.", "searches", "success", "mean rounds", "mean prompt tokens", "p90 tokens", "ms/search", "level-by-level rounds / tokens"):
                t.add_column(col, justify="right")
            for d in descent:
                t.add_row(
                    d["query_set"], str(d["max_candidates"]), str(d["searches"]), f"{d['success_rate']:.1%}",
                    f"{d['mean_rounds']:.2f} {mark(d['mean_rounds'], TARGETS['descent_rounds'], False)}",
                    f"{d['mean_prompt_tokens']:,.0f} {mark(d['mean_prompt_tokens'], TARGETS['descent_tokens'], False)}",
                    f"{d['p90_prompt_tokens']:,.0f}", f"{d['engine_ms_per_search']:,.0f}",
                    f"{d['baseline_level_mean_rounds']:.2f} / {d['baseline_level_mean_tokens']:,.0f}",
                )
            console.print(t)
            console.print(
                f"targets: mean rounds ≤ 2.0, ≤ 3,000 prompt tokens per search. Whole tree in one prompt: 1 round, "
                f"{descent[0]['baseline_whole_tree_tokens']:,} tokens. Rounds per search: "
                + "; ".join(f"{d['query_set']} @{d['max_candidates']}: {d['rounds_distribution']}" for d in descent)
            )
        la = r.get("local_agent")
        if la:
            t = Table(title=f"LocalAgent on ICD-10-CM inclusion terms ({la['queries']} queries that miss the exact index)")
            t.add_column("measure")
            t.add_column("value", justify="right")
            for key, title in (
                ("top1", "top-1 (matched the target)"), ("matched_ancestor", "matched an ancestor of the target"),
                ("matched_wrong", "matched another node (incl. ancestors)"), ("ambiguous", "ambiguous"),
                ("not_found", "not found"), ("target_in_returned", "target in the returned node/candidates"),
                ("target_shown_to_agent", "target shown to the agent in some round"),
            ):
                t.add_row(title, f"{la[key]:.1%}")
            t.add_row("mean rounds", f"{la['mean_rounds']:.2f}")
            t.add_row("ms per search", f"{la['ms_per_search']:.1f}")
            console.print(t)


def markdown_report(results: list[dict[str, Any]], env: dict[str, Any]) -> str:
    """The same figures as Markdown tables, for docs/benchmarks.md."""
    def cell(value: float, fmt: str, target: tuple[float, bool] | None = None) -> str:
        text = fmt.format(value)
        if target is not None:
            ok = value >= target[0] if target[1] else value <= target[0]
            text += " ✅" if ok else " ❌"
        return text

    lines = ["| metric | " + " | ".join(f"{r['size']} ({r['nodes']:,} nodes)" for r in results) + " | target |"]
    lines.append("|---|" + "---:|" * len(results) + "---|")
    spec: list[tuple[str, str, str, tuple[float, bool] | None, str]] = [
        ("bulk import (batch_create_keywords), s", "import_s", "{:.1f}", None, ""),
        ("batch nodes/s", "batch_nodes_per_s", "{:,.0f}", (TARGETS["batch_nodes_per_s"], True), "≥ 50,000"),
        ("cold open from JSONL (indexes/ deleted), s", "open_jsonl_s", "{:.2f}", None, ""),
        ("cold open with persisted indexes, s", "open_indexes_s", "{:.2f}", None, ""),
        ("RSS per node, open from JSONL, bytes", "open_jsonl_rss_bytes_per_node", "{:,.0f}", None, ""),
        ("RSS per node, open with indexes, bytes", "rss_bytes_per_node", "{:,.0f}", None, ""),
        ("disk per node, bytes", "disk_bytes_per_node", "{:,.0f}", None, ""),
        ("exact search p50, µs", "exact_p50_us", "{:.1f}", (TARGETS["exact_p50_us"], False), "≤ 20"),
        ("exact search p99, µs", "exact_p99_us", "{:.1f}", (TARGETS["exact_p99_us"], False), "≤ 100"),
        ("exact search, same queries again p50 / p99, µs", "exact_repeat", "{}", None, ""),
        ("durable single create_keyword/s", "single_writes_per_s", "{:,.0f}", (TARGETS["single_writes_per_s"], True), "≥ 1,000"),
        ("single write p50 / p99, ms", "single_write", "{}", None, ""),
    ]
    for r in results:
        r["disk_bytes_per_node"] = r["disk_bytes"] / max(1, r["nodes"])
        r["exact_repeat"] = f"{r['exact_repeat_p50_us']:.1f} / {r['exact_repeat_p99_us']:.1f}"
        r["single_write"] = f"{r['single_write_p50_ms']:.2f} / {r['single_write_p99_ms']:.2f}"
    for title, key, fmt, target, target_text in spec:
        lines.append(f"| {title} | " + " | ".join(cell(r[key], fmt, target) for r in results) + f" | {target_text} |")
    lines.append("")
    lines.append(
        f"Disk: append + fsync {env['fsync_mean_us']:,.0f} µs mean, {env['fsync_p50_us']:,.0f} µs p50 "
        f"({env['fsyncs_per_s']:,.0f} fsyncs/s). Load average at start {', '.join(f'{x:.1f}' for x in env.get('loadavg_start', ()))}."
    )
    for r in results:
        if r.get("descent"):
            lines += ["", "| query set | max_candidates | searches | success | mean rounds | mean prompt tokens | p90 tokens | rounds distribution | one level per round: rounds / tokens |", "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
            for d in r["descent"]:
                lines.append(
                    f"| {d['query_set']} | {d['max_candidates']} | {d['searches']} | {d['success_rate']:.1%} | "
                    f"{cell(d['mean_rounds'], '{:.2f}', (TARGETS['descent_rounds'], False))} | "
                    f"{cell(d['mean_prompt_tokens'], '{:,.0f}', (TARGETS['descent_tokens'], False))} | {d['p90_prompt_tokens']:,.0f} | "
                    f"{d['rounds_distribution']} | {d['baseline_level_mean_rounds']:.2f} / {d['baseline_level_mean_tokens']:,.0f} |"
                )
            lines.append(f"\nWhole tree in one prompt: 1 round, {r['descent'][0]['baseline_whole_tree_tokens']:,} prompt tokens.")
        la = r.get("local_agent")
        if la:
            lines += ["", "| LocalAgent on inclusion terms | value |", "|---|---:|"]
            for key, title in (
                ("top1", "top-1: matched the target"), ("matched_ancestor", "matched an ancestor of the target"),
                ("matched_wrong", "matched another node (ancestors included)"), ("ambiguous", "ambiguous"),
                ("not_found", "not found"), ("target_in_returned", "target in the returned node or candidates"),
                ("target_shown_to_agent", "target shown to the agent in some round"),
            ):
                lines.append(f"| {title} | {la[key]:.1%} |")
            lines.append(f"| queries / mean rounds / ms per search | {la['queries']} / {la['mean_rounds']:.2f} / {la['ms_per_search']:.0f} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR, help="folder with the ICD-10-CM XML (default ../shared/bench)")
    parser.add_argument("--sizes", default="10000,icd,1000000", help="comma list: a number (BFS subset of ICD, or synthetic expansion above its size) or 'icd'")
    parser.add_argument("--queries", type=int, default=1000, help="exact-search samples")
    parser.add_argument("--descent-targets", type=int, default=200, help="oracle descent searches per query set")
    parser.add_argument("--accuracy-queries", type=int, default=500, help="LocalAgent accuracy queries")
    parser.add_argument("--writes", type=int, default=500, help="durable single create_keyword calls")
    parser.add_argument("--chunk", type=int, default=50_000, help="nodes per batch_create_keywords call")
    parser.add_argument("--max-candidates", default="50,30", help="comma list of max_candidates for the oracle descent")
    parser.add_argument("--repeat", type=int, default=2, help="cold opens per variant (the fastest is reported)")
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--out-json", type=Path, default=None)
    parser.add_argument("--out-md", type=Path, default=None, help="also write the tables as Markdown")
    parser.add_argument("--workdir", type=Path, default=None, help="where the temporary trees go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the trees")
    parser.add_argument("--quick", action="store_true", help="smoke run: sizes 2000,icd and few queries")
    parser.add_argument("--only-size", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result-json", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = "2000,icd"
        args.queries = min(args.queries, 200)
        args.descent_targets = min(args.descent_targets, 20)
        args.accuracy_queries = min(args.accuracy_queries, 30)
        args.writes = min(args.writes, 50)
        args.repeat = 1
    args.max_candidates = [int(x) for x in str(args.max_candidates).split(",") if x.strip()]
    return args


#: Peak bytes per node of one size run (node list + tree + a cold-open process beside it).
PEAK_BYTES_PER_NODE = 9000


def run_one_size(args: argparse.Namespace) -> int:
    """Child-process mode: measure ``--only-size`` and write its result JSON."""
    console = Console()
    icd = load_icd10cm(args.bench_dir / ICD_FILE)
    label, nodes = nodes_for(args.only_size, icd, args.seed)
    if nodes is not icd:
        del icd
    work = Path(tempfile.mkdtemp(prefix="knowhub-tree-bench-", dir=args.workdir))
    try:
        result = measure_size(label, nodes, args, work, console)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    args.result_json.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.only_size:
        return run_one_size(args)
    console = Console() if sys.stdout.isatty() else Console(width=140)
    icd_count = len(load_icd10cm(args.bench_dir / ICD_FILE))
    console.log(f"ICD-10-CM: {icd_count:,} nodes; sizes {args.sizes}")
    env = machine()
    probe = Path(tempfile.mkdtemp(prefix="knowhub-fsync-", dir=args.workdir))
    try:
        env.update(fsync_cost(probe))
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    results = []
    for size in (s.strip() for s in args.sizes.split(",") if s.strip()):
        n = icd_count if size == "icd" else int(size)
        available = mem_available()
        if available and n * PEAK_BYTES_PER_NODE > available:
            fitted = int(available * 0.8 / PEAK_BYTES_PER_NODE) // 50_000 * 50_000
            note = f"{n:,} nodes need ~{n * PEAK_BYTES_PER_NODE / 2**30:.1f} GiB, {available / 2**30:.1f} GiB available"
            if fitted <= icd_count:
                console.log(f"skipping size {size}: {note}")
                env.setdefault("skipped", []).append(f"{size}: {note}")
                continue
            console.log(f"size {size} reduced to {fitted:,}: {note}")
            env.setdefault("reduced", []).append(f"{size} -> {fitted}: {note}")
            size = str(fitted)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
            result_path = Path(handle.name)
        try:
            cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--only-size", size, "--result-json", str(result_path)]
            proc = subprocess.run(cmd, check=False)
            if proc.returncode != 0:
                console.log(f"size {size} failed with exit code {proc.returncode}")
                env.setdefault("failed", []).append(size)
                continue
            results.append(json.loads(result_path.read_text(encoding="utf-8")))
        finally:
            result_path.unlink(missing_ok=True)
    env["loadavg_end"] = os.getloadavg()
    print_report(results, env, console)
    if args.out_json:
        payload = {"machine": env, "args": {k: str(v) for k, v in vars(args).items()}, "results": results}
        args.out_json.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    if args.out_md:
        args.out_md.write_text(markdown_report(results, env), encoding="utf-8")
    return 0 if results else 1


if __name__ == "__main__":
    raise SystemExit(main())

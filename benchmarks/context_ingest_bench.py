"""Context ingest speed with the default embedder (issue 19 §6).

Commits synthetic long technical chats (``_tech_chats``: English and Chinese, long
assistant replies with code; no benchmark text) through ``ContextEngineService`` with the
E5 default and times, per run:

* **end to end**: ``commit_session`` of every session followed by ``flush_index`` (the
  session is searchable when it returns), summed over the chats;
* **embedding alone**: the texts the projector handed to the embedder, in the same
  batches, embedded again by the same embedder with nothing else running in the process;
  also ``embed_joined``: the same texts with each session's in one call. Since a commit's
  prefetch embeds its nodes a few at a time, "the same batches" can be smaller than a
  session (slower alone, flattering ``overhead``): ``overhead_joined`` is the stricter
  ratio.

``overhead = end to end / embedding alone`` (1.0: the commit and index path adds nothing
beyond the embedding); throughput = indexed nodes / end-to-end seconds. Each is also given
in CPU seconds of the process (all its threads): on a shared machine wall time mostly
measures the wait for a core, CPU time what the code costs.

Before the clock starts, the process embeds a few texts (the engine's threads) and commits
two short chats, one English and one Chinese, into a throwaway data dir: the one-time
loads of a process (the Chinese tagger's dictionary, lazily imported modules) are reported
apart, as ``first_commit_cpu_s``, and stay out of the steady-state figures, as a running
server pays them once. ``--overlap`` runs the background indexer during the commits (what
``knowhub serve`` does): sessions are committed back to back and the clock stops when the
index holds them all, so the indexing of one session overlaps the commit of the next.

A commit starts embedding each node's L0 text on a background thread as it plans the node
(``ContextEngineService.PREFETCH_VECTORS``; ``--no-prefetch`` turns it off for this
checkout): those batches are recorded ones, so "embedding alone" embeds them too, and
their CPU lands in ``commit_cpu_s``.

``--workload techchats`` (:func:`run_tech_chats`) commits the real long technical chats of
``benchmarks/data`` (``TECH_CHAT_FILES``) instead, each into its own data dir, and reports per
chat the seconds (wall, CPU) until it is searchable, per 1k chat tokens (E5 tokens), the
nodes (and those citing an assistant message), what was embedded, and the overhead against
embedding the same texts alone — what issue 19's user waits for. A sampler outside the
process (``_idle_sampler.py``) counts its runnable threads while the clock runs: ``idle_core_s``
(core-seconds it had no work for) and ``quiet_s = (CPU s + idle core-s) / cores``, the wall
seconds expected on a quiet machine (the machine is shared; wall seconds there lie).

``--compare DIR`` runs the same workload, alternating, against another checkout's
``src`` (``git archive <commit> src | tar -x -C DIR``), so before and after share the
machine's load; given twice or more, every checkout runs in turn (the first is "base",
the others are named by their folder); each run is a fresh process and a fresh data dir. The last lines are one
summary line per metric (``SUMMARY <metric> this=... base=...``).

    python benchmarks/context_ingest_bench.py --chats 3 --sessions 4 --turns 10 \\
        --rounds 2 --compare /tmp/base   # prints a table, --json writes the rows
    python benchmarks/context_ingest_bench.py --workload techchats --rounds 2 --compare /tmp/base
    python benchmarks/context_ingest_bench.py --workload techchats --chat-files tech_chats_long_en --compare /tmp/base
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _warm_up(embedder: Any, seed: int) -> float:
    """CPU seconds of a process's first commits (see the module doc), in a throwaway dir."""
    from _tech_chats import tech_chat

    from knowhub.context.service import ContextEngineService
    from knowhub.scope import RequestContext

    cpu = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        svc = ContextEngineService(tmp, embedder=embedder, durable=False)
        for n, chinese in enumerate((False, True)):
            chat = tech_chat(100 + n, sessions=1, turns=3, chinese=chinese, seed=seed + 1)
            svc.commit_session(RequestContext("warm", f"w{n}"), chat[0], options={"session_id": "w"})
        svc.flush_index()
        svc.close()
    return time.process_time() - cpu


def _recording(base: type, batches: list[list[str]], session_of: list[int], session: list[int],
               spent: list[float], spent_cpu: list[float]) -> type:
    """``base`` (the E5 embedder) recording each ``embed_matrix`` batch, the session it
    belonged to and the wall and CPU seconds spent in it."""

    class Recording(base):  # type: ignore[misc, valid-type]
        def embed_matrix(self, texts: Any) -> Any:
            started, cpu = time.perf_counter(), time.process_time()
            out = super().embed_matrix(texts)
            spent[0] += time.perf_counter() - started
            spent_cpu[0] += time.process_time() - cpu
            batches.append(list(texts))
            session_of.append(session[0])
            return out

    return Recording


def run_once(chats: int, sessions: int, turns: int, seed: int, overlap: bool = False,
             embed_tokens: int | None = None, no_prefetch: bool = False) -> dict[str, Any]:
    """One measurement in this process (``knowhub`` from whatever ``sys.path`` gives);
    ``embed_tokens`` overrides the service's default token budget (0: uncut) where the
    code has one."""
    from _tech_chats import tech_chats

    from knowhub.context.service import ContextEngineService
    from knowhub.providers.multilingual import MultilingualE5Embedder
    from knowhub.scope import RequestContext

    batches: list[list[str]] = []
    session_of: list[int] = []  # which session's commit + flush each batch belonged to
    session = [0]
    spent = [0.0]
    spent_cpu = [0.0]
    fsyncs = [0]
    Recording = _recording(MultilingualE5Embedder, batches, session_of, session, spent, spent_cpu)

    if no_prefetch:
        ContextEngineService.PREFETCH_VECTORS = False
    if embed_tokens is not None and hasattr(ContextEngineService, "EMBED_TOKENS"):
        ContextEngineService.EMBED_TOKENS = embed_tokens or None
    embedder = Recording()
    embedder.embed_matrix(["warm up the engine and its threads"] * 8)
    first_commit_cpu = _warm_up(MultilingualE5Embedder(), seed)
    batches.clear()
    session_of.clear()
    spent[0] = spent_cpu[0] = 0.0
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        fsyncs[0] += 1
        real_fsync(fd)

    data = tech_chats(chats, sessions, turns, seed=seed)
    messages = sum(len(s) for chat in data for s in chat)
    chars = sum(len(m["content"]) for chat in data for s in chat for m in s)
    with tempfile.TemporaryDirectory() as tmp:
        svc = ContextEngineService(tmp, embedder=embedder, poll_interval_s=0.02)
        commit_s = commit_cpu = 0.0
        os.fsync = counting_fsync
        if overlap:
            svc.start_background_indexing()
        started, cpu = time.perf_counter(), time.process_time()
        for i, chat in enumerate(data):
            ctx = RequestContext("bench", f"u{i}", agent_id=f"a{i}")
            for s, msgs in enumerate(chat):
                t0, c0 = time.perf_counter(), time.process_time()
                svc.commit_session(ctx, msgs, options={"session_id": f"s{s}"})
                commit_s += time.perf_counter() - t0
                commit_cpu += time.process_time() - c0
                if not overlap:
                    svc.flush_index()
                session[0] += 1
        svc.flush_index()
        end_to_end = time.perf_counter() - started
        end_to_end_cpu = time.process_time() - cpu
        os.fsync = real_fsync
        nodes = svc.index.count()
        svc.close()
    texts = [t for b in batches for t in b]
    started, cpu = time.perf_counter(), time.process_time()
    for batch in batches:
        MultilingualE5Embedder.embed_matrix(embedder, batch)
    alone = time.perf_counter() - started
    alone_cpu = time.process_time() - cpu
    # the same texts, each session's in one call (a commit's prefetch and the flush's misses
    # are two calls in the path; one call spreads them over the cores best)
    per_session: dict[int, list[str]] = {}
    for n, batch in zip(session_of, batches, strict=True):
        per_session.setdefault(n, []).extend(batch)
    started, cpu = time.perf_counter(), time.process_time()
    for batch in per_session.values():
        MultilingualE5Embedder.embed_matrix(embedder, batch)
    joined = time.perf_counter() - started
    joined_cpu = time.process_time() - cpu
    # long texts (whole assistant replies with code, 1.5-6k characters): what a node or a
    # knowledge item with a long text costs to embed
    replies = [m["content"] for chat in data for s in chat for m in s if m["role"] == "assistant"]
    long_texts = [("\n\n".join(replies[i : i + k]))[: 1500 * k] for k, i in ((1, 0), (2, 3), (4, 7), (2, 11))]
    started, cpu = time.perf_counter(), time.process_time()
    MultilingualE5Embedder.embed_matrix(embedder, long_texts)
    long_s = time.perf_counter() - started
    long_cpu = time.process_time() - cpu
    return {
        "long_texts": len(long_texts), "long_chars": sum(map(len, long_texts)), "long_embed_s": round(long_s, 3),
        "long_embed_cpu_s": round(long_cpu, 3), "end_to_end_cpu_s": round(end_to_end_cpu, 3),
        "embed_in_path_cpu_s": round(spent_cpu[0], 3), "embed_alone_cpu_s": round(alone_cpu, 3),
        "overhead_cpu": round(end_to_end_cpu / alone_cpu, 3) if alone_cpu else None,
        "nodes_per_cpu_s": round(nodes / end_to_end_cpu, 2),
        "messages": messages, "message_chars": chars, "nodes": nodes, "embed_calls": len(batches),
        "texts": len(texts), "text_chars": sum(map(len, texts)), "end_to_end_s": round(end_to_end, 3),
        "commit_s": round(commit_s, 3), "commit_cpu_s": round(commit_cpu, 3),
        "first_commit_cpu_s": round(first_commit_cpu, 3), "fsyncs_per_commit": round(fsyncs[0] / (chats * sessions), 1),
        "tokens_embedded": sum(embedder._model.token_count(t) - embedder._model.token_count("") for t in texts),
        "overlap": overlap, "embed_tokens": getattr(ContextEngineService, "EMBED_TOKENS", None), "embed_in_path_s": round(spent[0], 3), "embed_alone_s": round(alone, 3),
        "overhead": round(end_to_end / alone, 3) if alone else None,
        "embed_joined_s": round(joined, 3), "embed_joined_cpu_s": round(joined_cpu, 3),
        "overhead_joined": round(end_to_end / joined, 3) if joined else None,
        "overhead_joined_cpu": round(end_to_end_cpu / joined_cpu, 3) if joined_cpu else None,
        "nodes_per_s": round(nodes / end_to_end, 2), "messages_per_s": round(messages / end_to_end, 2),
        "load_avg": os.getloadavg()[0],
    }


#: The real long technical chats written for this project (``tech_chat_bench``'s data).
TECH_CHAT_FILES = ("tech_chats_en", "tech_chats_zh", "tech_chats_fresh_en", "tech_chats_fresh_zh")


def _timed(fn: Any) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - started, time.process_time() - cpu


def run_tech_chats(seed: int, files: tuple[str, ...] = TECH_CHAT_FILES) -> dict[str, Any]:
    """``--workload techchats``: each chat of ``benchmarks/data/<files>.json`` (``--chat-files``) into
    its own fresh data dir (its own user), session by session, each commit followed by
    ``flush_index()``; per chat the seconds (wall, CPU) from its first commit until the last
    flush returns, i.e. until the whole chat is searchable, and what was embedded."""
    from knowhub.context.service import ContextEngineService
    from knowhub.providers.multilingual import MultilingualE5Embedder
    from knowhub.scope import RequestContext

    batches: list[list[str]] = []
    session_of: list[int] = []
    session, spent, spent_cpu = [0], [0.0], [0.0]
    embedder = _recording(MultilingualE5Embedder, batches, session_of, session, spent, spent_cpu)()
    embedder.embed_matrix(["warm up the engine and its threads"] * 8)
    first_commit_cpu = _warm_up(MultilingualE5Embedder(), seed)
    batches.clear()
    session_of.clear()
    count = embedder._model.token_count
    empty = count("")

    def tokens(text: str) -> int:
        return int(count(text) - empty)

    chats = [c for name in files
             for c in json.loads((REPO / "benchmarks" / "data" / f"{name}.json").read_text(encoding="utf-8"))["conversations"]]
    rows: list[dict[str, Any]] = []
    for chat in chats:
        first_batch = len(batches)
        spent[0] = spent_cpu[0] = 0.0
        msgs_all = [m for s in chat["sessions"] for m in s["messages"]]
        role = {str(m["id"]): m["role"] for m in msgs_all}
        ctx = RequestContext("bench", f"u-{chat['id']}", agent_id=f"a-{chat['id']}")
        with tempfile.TemporaryDirectory() as tmp:
            svc = ContextEngineService(tmp, embedder=embedder, poll_interval_s=0.02)
            commit_s = commit_cpu = 0.0
            sampler = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_idle_sampler.py")), str(os.getpid())],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            time.sleep(0.2)  # its start-up, outside the clock
            started, cpu = time.perf_counter(), time.process_time()
            for s in chat["sessions"]:
                msgs = [{**m, "timestamp": s["date"]} for m in s["messages"]]
                options = {"session_id": f"{chat['id']}-{s['id']}", "session_time": s["date"]}
                t0, c0 = time.perf_counter(), time.process_time()
                svc.commit_session(ctx, msgs, options=options)
                commit_s, commit_cpu = commit_s + time.perf_counter() - t0, commit_cpu + time.process_time() - c0
                svc.flush_index()
                session[0] += 1
            wall, wall_cpu = time.perf_counter() - started, time.process_time() - cpu
            idle = json.loads(sampler.communicate("")[0])
            nodes = svc.index.count()
            refs = [(p.get("metadata") or {}).get("source_refs") or [] for p in svc.index.payloads(svc.index.ids({"level": "0"})).values()]
            svc.close()
        mine = batches[first_batch:]
        texts = [t for b in mine for t in b]
        rows.append({
            "chat": chat["id"], "sessions": len(chat["sessions"]), "messages": len(msgs_all),
            "assistant_messages": sum(1 for m in msgs_all if m["role"] == "assistant"),
            "chat_chars": sum(len(m["content"]) for m in msgs_all), "chat_tokens": sum(tokens(m["content"]) for m in msgs_all),
            "searchable_s": round(wall, 3), "searchable_cpu_s": round(wall_cpu, 3),
            "idle_core_s": idle["idle_core_s"], "quiet_s": round((wall_cpu + idle["idle_core_s"]) / idle["cores"], 3),
            "commit_s": round(commit_s, 3), "commit_cpu_s": round(commit_cpu, 3),
            "embed_in_path_s": round(spent[0], 3), "embed_in_path_cpu_s": round(spent_cpu[0], 3),
            "nodes": nodes, "nodes_citing_assistant": sum(1 for r in refs if any(role.get(str(x)) == "assistant" for x in r)),
            "embed_calls": len(mine), "texts": len(texts), "tokens_embedded": sum(map(tokens, texts)),
            "_batches": mine, "_sessions": session_of[first_batch:],
        })
    # embedding alone, after every chat: the same batches, then each session's texts in one call
    for row in rows:
        mine, sessions = row.pop("_batches"), row.pop("_sessions")
        row["embed_alone_s"], row["embed_alone_cpu_s"] = (round(x, 3) for x in _timed(
            lambda mine=mine: [MultilingualE5Embedder.embed_matrix(embedder, b) for b in mine]))
        joined: dict[int, list[str]] = {}
        for k, batch in zip(sessions, mine, strict=True):
            joined.setdefault(k, []).extend(batch)
        row["embed_joined_s"], row["embed_joined_cpu_s"] = (round(x, 3) for x in _timed(
            lambda joined=joined: [MultilingualE5Embedder.embed_matrix(embedder, b) for b in joined.values()]))
    total = {key: sum(r[key] for r in rows) for key in rows[0] if isinstance(rows[0][key], int | float)}
    for row in [*rows, total]:
        k = row["chat_tokens"] / 1000
        row.update({
            "searchable_s_per_1k_tokens": round(row["searchable_s"] / k, 3),
            "searchable_cpu_s_per_1k_tokens": round(row["searchable_cpu_s"] / k, 3),
            "nodes_per_s": round(row["nodes"] / row["searchable_s"], 2),
            "nodes_per_cpu_s": round(row["nodes"] / row["searchable_cpu_s"], 2),
            "cores_used": round(row["searchable_cpu_s"] / row["searchable_s"], 2),
            "overhead": round(row["searchable_s"] / row["embed_alone_s"], 3) if row["embed_alone_s"] else None,
            "overhead_cpu": round(row["searchable_cpu_s"] / row["embed_alone_cpu_s"], 3) if row["embed_alone_cpu_s"] else None,
            "overhead_joined": round(row["searchable_s"] / row["embed_joined_s"], 3) if row["embed_joined_s"] else None,
            "overhead_joined_cpu": round(row["searchable_cpu_s"] / row["embed_joined_cpu_s"], 3) if row["embed_joined_cpu_s"] else None,
        })
    total["chat"] = "all"
    return {"chats": rows, "total": total, "first_commit_cpu_s": round(first_commit_cpu, 3),
            "embed_tokens": getattr(ContextEngineService, "EMBED_TOKENS", None), "load_avg": os.getloadavg()[0]}


def _child(src: Path, args: argparse.Namespace, this: bool = True) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "--child", "--chats", str(args.chats), "--sessions", str(args.sessions),
           "--turns", str(args.turns), "--seed", str(args.seed), *(["--overlap"] if args.overlap else []),
           *(["--embed-tokens", str(args.embed_tokens)] if this and args.embed_tokens is not None else []),
           *(["--no-prefetch"] if this and args.no_prefetch else []), "--workload", args.workload,
           "--chat-files", args.chat_files]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _report_tech_chats(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace, load_start: float) -> None:
    """Per chat and in all, medians over the rounds: time until searchable and what it embedded."""
    print("\n| chat | code | E5 tokens of the chat | nodes (citing an assistant message) | texts embedded (E5 tokens) | "
          "searchable s (CPU s) | s per 1k chat tokens (CPU s) | nodes/s | nodes per CPU s | "
          "embedding alone s (CPU s) | overhead wall / CPU | one call per session s (CPU s) | overhead wall / CPU against it |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    meds: dict[str, dict[str, dict[str, float]]] = {}
    for name, rounds in runs.items():
        per_chat = [*zip(*(r["chats"] for r in rounds), strict=True), tuple(r["total"] for r in rounds)]
        meds[name] = {rows[0]["chat"]: {k: statistics.median(row[k] for row in rows) for k in rows[0]
                                        if isinstance(rows[0][k], int | float)} for rows in per_chat}
    for chat in meds["this"]:
        for name in meds:
            m = meds[name][chat]
            print(f"| {chat} | {name} | {m['chat_tokens']:.0f} | {m['nodes']:.0f} ({m['nodes_citing_assistant']:.0f}) | "
                  f"{m['texts']:.0f} ({m['tokens_embedded']:.0f}) | {m['searchable_s']:.1f} ({m['searchable_cpu_s']:.1f}) | "
                  f"{m['searchable_s_per_1k_tokens']:.2f} ({m['searchable_cpu_s_per_1k_tokens']:.2f}) | "
                  f"{m['nodes_per_s']:.2f} | {m['nodes_per_cpu_s']:.2f} | {m['embed_alone_s']:.1f} ({m['embed_alone_cpu_s']:.1f}) | "
                  f"{m['overhead']:.2f} / {m['overhead_cpu']:.2f} | {m['embed_joined_s']:.1f} ({m['embed_joined_cpu_s']:.1f}) | "
                  f"{m['overhead_joined']:.2f} / {m['overhead_joined_cpu']:.2f} |")
    for name, rounds in runs.items():
        print(f"load average (1 min) of {name}'s runs: " + ", ".join(
            f"{r.get('load_avg_start', float('nan')):.2f} -> {r['load_avg']:.2f}" for r in rounds))
    print(f"\nmedians of {args.rounds} round(s) per chat ('all': medians of the per-round sums); load average "
          f"{load_start:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    for key in ("searchable_s", "searchable_cpu_s", "searchable_s_per_1k_tokens", "searchable_cpu_s_per_1k_tokens",
                "nodes", "nodes_citing_assistant", "texts", "tokens_embedded", "nodes_per_s", "nodes_per_cpu_s",
                "cores_used", "idle_core_s", "quiet_s", "overhead", "overhead_cpu", "overhead_joined", "overhead_joined_cpu", "commit_cpu_s"):
        parts = " ".join(f"{name}={m['all'][key]:g}" for name, m in meds.items())
        ratio = (f" this/base={meds['this']['all'][key] / meds['base']['all'][key]:.2f}"
                 if "base" in meds and meds["base"]["all"][key] else "")
        print(f"SUMMARY techchats {key}: {parts}{ratio}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--turns", type=int, default=10, help="user/assistant pairs per session")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--compare", type=Path, action="append", default=[],
                        help="another checkout's root (holding src/) to run alternately; repeatable")
    parser.add_argument("--embed-tokens", type=int, default=None,
                        help="token budget of embedded L0 texts for this checkout (0: uncut; default: the service's)")
    parser.add_argument("--overlap", action="store_true", help="background indexer during the commits (module doc)")
    parser.add_argument("--no-prefetch", action="store_true",
                        help="this checkout: the commit does not start embedding its memories (ContextEngineService.PREFETCH_VECTORS)")
    parser.add_argument("--workload", choices=("synthetic", "techchats"), default="synthetic",
                        help="techchats: the real chats of benchmarks/data (run_tech_chats); --chats/--sessions/--turns unused")
    parser.add_argument("--chat-files", default=",".join(TECH_CHAT_FILES),
                        help="techchats: comma-separated data files (benchmarks/data/<name>.json), e.g. tech_chats_xl_en")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.workload == "techchats":
        print(json.dumps(run_tech_chats(args.seed, tuple(f for f in args.chat_files.split(",") if f))))
        return
    if args.child:
        print(json.dumps(run_once(args.chats, args.sessions, args.turns, args.seed, args.overlap, args.embed_tokens,
                                  args.no_prefetch)))
        return
    runs: dict[str, list[dict[str, Any]]] = {"this": []}
    roots = {"this": REPO}
    for n, root in enumerate(args.compare):
        name = "base" if n == 0 else root.name
        runs[name], roots[name] = [], root
    load_start = os.getloadavg()
    print(f"load average at start: {load_start}", flush=True)
    for r in range(args.rounds):
        for name in runs:
            load = os.getloadavg()[0]
            row = _child(roots[name] / "src", args, name == "this")
            row["load_avg_start"] = load
            runs[name].append(row)
            print(f"round {r + 1} {name}: {row}", flush=True)
    print(f"load average at end: {os.getloadavg()}")
    if args.workload == "techchats":
        _report_tech_chats(runs, args, load_start[0])
        return
    print("\n| code | nodes | texts embedded (tokens) | end to end s (CPU s) | embedding alone s (CPU s) | overhead wall / CPU | "
          "embedding alone, one call per session s (CPU s) | overhead wall / CPU against it | "
          "nodes/s | nodes per CPU s | commit s (CPU s) | fsyncs per commit |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    meds: dict[str, dict[str, float]] = {}
    for name, rows in runs.items():
        meds[name] = {key: statistics.median(row[key] for row in rows) for key in rows[0] if isinstance(rows[0][key], int | float)}
        m = meds[name]
        print(f"| {name} | {m['nodes']:.0f} | {m['texts']:.0f} ({m['tokens_embedded']:.0f}) | {m['end_to_end_s']:.1f} ({m['end_to_end_cpu_s']:.1f}) | "
              f"{m['embed_alone_s']:.1f} ({m['embed_alone_cpu_s']:.1f}) | {m['overhead']:.2f} / {m['overhead_cpu']:.2f} | "
              f"{m['embed_joined_s']:.1f} ({m['embed_joined_cpu_s']:.1f}) | {m['overhead_joined']:.2f} / {m['overhead_joined_cpu']:.2f} | "
              f"{m['nodes_per_s']:.2f} | {m['nodes_per_cpu_s']:.2f} | {m['commit_s']:.1f} ({m['commit_cpu_s']:.1f}) | "
              f"{m['fsyncs_per_commit']:.0f} |")
    print(f"\nmedians of {args.rounds} round(s); load average {load_start[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end; "
          f"overlap={'on' if args.overlap else 'off'}; embed_tokens (this)={runs['this'][0].get('embed_tokens')}")
    for key, label in (("overhead", "overhead_wall (end to end / embedding alone)"),
                       ("overhead_cpu", "overhead_cpu (same, CPU seconds)"),
                       ("overhead_joined", "overhead_joined (end to end / each session's texts embedded in one call)"),
                       ("overhead_joined_cpu", "overhead_joined_cpu (same, CPU seconds)"),
                       ("nodes_per_s", "nodes_per_s (searchable nodes per wall second)"),
                       ("nodes_per_cpu_s", "nodes_per_cpu_s"),
                       ("tokens_embedded", "tokens_embedded"),
                       ("commit_cpu_s", "commit_cpu_s (extraction, policies, writes; with --overlap it includes the indexer)"),
                       ("first_commit_cpu_s", "first_commit_cpu_s (one-time loads, not in the figures above)"),
                       ("fsyncs_per_commit", "fsyncs_per_commit")):
        parts = " ".join(f"{name}={m[key]:g}" for name, m in meds.items())
        ratio = f" this/base={meds['this'][key] / meds['base'][key]:.2f}" if "base" in meds and meds["base"][key] else ""
        print(f"SUMMARY {label}: {parts}{ratio}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()

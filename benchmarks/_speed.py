"""Speed helpers shared by the knowledge and context benchmarks (issue 9 §3).

- :func:`latency_summary`: p50 / p95 / p99 of a list of seconds, in milliseconds.
- :func:`rss_mb`: the process's resident memory now (``VmRSS``), for memory per item.
- :func:`dir_mb`: size of a directory tree (the persisted index copy).
- :func:`bm25s_baseline`: the plain-BM25 baseline of the issue: ``bm25s`` with PyStemmer's
  English stemmer and English stop words over the same texts, top-``k`` per query, timed
  per query (tokenizing the query included), on the same machine in the same run. It has no
  filters: it ranks the whole corpus (what the issue's baseline did).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def pct(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@contextlib.contextmanager
def paused(pids: Sequence[int]) -> Iterator[None]:
    """Stop other processes of ours (a long cache fill, a store build) for a timed phase
    on a shared machine, and let them go on after (SIGSTOP / SIGCONT)."""
    stopped = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
    try:
        yield
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGCONT)


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """``{"p50_ms", "p95_ms", "p99_ms"}`` of durations given in seconds."""
    ms = [s * 1000 for s in seconds]
    return {f"p{p}_ms": round(pct(ms, p), 2) for p in (50, 95, 99)}


def rss_mb() -> float:
    """Resident set size of this process in MiB (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def dir_mb(path: Path) -> float:
    """Bytes under ``path`` in MiB (0 when it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
    return total / (1024 * 1024)


def bm25s_baseline(texts: Sequence[str], queries: Sequence[str], k: int) -> dict[str, Any]:
    """Build bm25s (+ PyStemmer, English stop words) over ``texts``; time top-``k`` queries."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    start = time.perf_counter()
    corpus_tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    build_s = time.perf_counter() - start
    k = max(1, min(k, len(texts)))
    for query in queries[:5]:  # warm-up
        retriever.retrieve(bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False),
                           k=k, show_progress=False)
    times: list[float] = []
    for query in queries:
        t0 = time.perf_counter()
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if tokens.ids and tokens.ids[0]:
            retriever.retrieve(tokens, k=k, show_progress=False)
        times.append(time.perf_counter() - t0)
    return {"docs": len(texts), "k": k, "build_s": round(build_s, 2), **latency_summary(times)}

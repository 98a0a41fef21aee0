"""Idle cores of another process, sampled from outside it (``context_ingest_bench``).

Run as ``python _idle_sampler.py PID [CORES]``: every 5 ms it counts the threads of PID that
are runnable (state R: on a core or waiting for one) and adds ``max(0, CORES - runnable)``
times the interval to the idle core-seconds; when its stdin closes it prints one JSON line
(``idle_core_s``, ``mean_runnable``, ``mean_disk_wait``: threads in D, e.g. in fsync).

Why from outside: on a machine shared with other jobs, wall seconds measure the wait for a
core, but whether *this* process had work for every core does not depend on that wait.
``(CPU seconds + idle core-seconds) / CORES`` is then what the run would take on a quiet
machine with CORES cores, as far as the phases keep their lengths (an fsync under others'
I/O lasts longer, so the estimate errs high). A separate process, so that sampling takes
neither the measured process's GIL nor its CPU seconds.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time


def main() -> None:
    pid, cores = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else (os.cpu_count() or 1)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    tasks = f"/proc/{pid}/task"
    idle = 0.0
    samples = runnable_sum = disk_sum = 0
    last = time.perf_counter()
    while not done.wait(0.005):
        runnable = disk = 0
        try:
            tids = os.listdir(tasks)
        except OSError:
            break
        for tid in tids:
            try:
                with open(f"{tasks}/{tid}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split(None, 1)[0]
            except OSError:
                continue
            runnable += state == b"R"
            disk += state == b"D"
        now = time.perf_counter()
        idle += max(0, cores - runnable) * (now - last)
        last = now
        samples += 1
        runnable_sum += runnable
        disk_sum += disk
    print(json.dumps({"idle_core_s": round(idle, 3), "mean_runnable": round(runnable_sum / max(1, samples), 3),
                      "mean_disk_wait": round(disk_sum / max(1, samples), 3), "samples": samples, "cores": cores}))


if __name__ == "__main__":
    main()

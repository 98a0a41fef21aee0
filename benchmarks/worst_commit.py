"""Worst context commit under the default caps (issue 18 §2): wall, CPU, peak RSS.

``python benchmarks/worst_commit.py DIR MESSAGES CHARS`` in a fresh process (DIR must not
exist); the worst cases are ``500 800`` (the message cap) and ``12 32000`` (the size caps)."""
import resource
import sys
import time
from pathlib import Path

from knowhub.context.service import ContextEngineService
from knowhub.scope import RequestContext

S = ["I love painting sunsets with my sister Anna in Boston.", "My name is Melanie Jones and I work at Google as an engineer.",
     "Yesterday we went hiking on Mount Tam with Caroline and her dog Max.", "My favourite food is ramen and I hate cilantro.",
     "I fixed the build by pinning numpy 1.26 after the upgrade broke it."]
n, chars = int(sys.argv[2]), int(sys.argv[3])
msgs = [{"id": f"m{i}", "role": "user", "name": "Melanie", "timestamp": "1:56 pm on 8 May, 2023",
         "content": " ".join(S[(i + k) % 5] for k in range(chars // 50 + 1))[:chars]} for i in range(n)]
svc = ContextEngineService(Path(sys.argv[1]))
ctx = RequestContext("default", "alice", agent_id="helper", session_id="w")
t, c = time.perf_counter(), time.process_time()
r = svc.commit_session(ctx, msgs, options={"session_id": "w"})
wall, cpu = time.perf_counter() - t, time.process_time() - c
svc.close()
print(f"messages={n} chars={n*chars} wall_s={wall:.1f} cpu_s={cpu:.1f} peak_rss_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f} "
      f"raw={r.stats['raw_candidates']} written={len(r.write_results)-1} dropped={r.stats.get('candidates_dropped')} status={r.status} deadline={r.stats.get('deadline_exceeded', False)}")

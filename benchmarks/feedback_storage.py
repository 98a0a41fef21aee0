"""Storage of 1,000 helpful feedbacks with 1,000-character cases, one batch, one principal,
one item (issue 18 §1): ``python benchmarks/feedback_storage.py DIR`` (DIR must not exist)."""
import inspect
import sys
import time
from pathlib import Path

from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal

d = Path(sys.argv[1])
kw = {"feedback_per_minute": 0} if "feedback_per_minute" in inspect.signature(KnowledgeHub).parameters else {}


def size() -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


pat = Principal.of("user:pat", [], publish=["public"])
bob = Principal.of("user:bob", [])
with KnowledgeHub(d, secret_key=bytes(32), **kw) as hub:
    item = hub.save(pat, {"task": "t", "content": "c", "types": ["tool"], "scopes": ["public"]})
b0 = size()
with KnowledgeHub(d, secret_key=bytes(32), **kw) as hub:
    t = time.perf_counter()
    r = hub.batch_update(bob, [{"knowledge_id": item.id, "is_helpful": True, "case": {"outcome": "z" * 1000}}] * 1000)
    el = time.perf_counter() - t
    it = hub.get(pat, item.id)
print(f"updated={r['updated']} before={b0} after={size()} grown={size()-b0} seconds={el:.2f} helpful={it.helpful} version={it.version} limit={kw}")

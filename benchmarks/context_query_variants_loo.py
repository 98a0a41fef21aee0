"""LoCoMo: query-side variants that a replay of ranked lists cannot measure, searched on
stores built once, leave one conversation out (issue 19 §7, sixth session).

Why: a variant that changes what the search *asks* (the query text embedded or tokenized)
or a rule applied inside the search (session cohesion per question kind) changes the
candidates themselves, so ``context_replay_*.py`` cannot score it. This runner opens the
five dev stores that ``context_budget_loo.py --stores DIR`` built (a reopened store ranks as
the live one), wraps the retriever for each variant and scores recall@10 messages as the
runner does; the fold choice is :func:`context_budget_loo.loo_report`'s.

Variants:

* ``strip-dense`` / ``strip-lexical`` / ``strip-both``: a named speaker's name (and "'s")
  removed from the dense / lexical query (speaker focus already raises that person's
  memories, so the name only adds the turns that address them);
* ``first-person w``: for a question naming one speaker, a first-person form of it
  ("What activities does Ana do?" → "What activities I do") embedded too and added to the
  query vector with weight ``w`` (``only``: used alone);
* ``cohesion-list g``: session cohesion with gain ``g`` for list questions only (0: off),
  the default gain for the others.

    python benchmarks/context_budget_loo.py --settings '[{}]' --stores /tmp/stores --out-json F
    python benchmarks/context_query_variants_loo.py --stores /tmp/stores --out-json F2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import BENCH_DIR, LOCOMO_FILE, load_locomo
from context_budget_loo import build, finish_report, loo_report, score
from context_replay_loo import is_list_question

import knowhub.context.service as service_module
from knowhub.context.core.query import TypedQuery
from knowhub.context.retrieval import l0_retriever
from knowhub.providers.embedding import embed_queries

_AUX = r"(?:does|did|do|has|have|is|was|will|would|had|can)"


def strip_names(text: str, names: list[str]) -> str:
    for name in names:
        for form in {name, name.split()[0]}:
            text = re.sub(rf"\b{re.escape(form)}(?:'s|’s)?\b", "", text)
    return re.sub(r"\s+", " ", text).strip()


def first_person(text: str, names: list[str]) -> str | None:
    """The question from the named speaker's side, or None when it names not exactly one."""
    named = [form for n in names for form in (n, n.split()[0]) if re.search(rf"\b{re.escape(form)}\b", text)]
    if len({n for n in names if n in named or n.split()[0] in named}) != 1:
        return None
    name = re.escape(max(named, key=len))
    out = re.sub(rf"\b{name}(?:'s|’s)", "my", text)  # possessive first: "did Ben's sister" keeps "did"
    out = re.sub(rf"\b{_AUX}\s+{name}\b", "I", out)
    return re.sub(rf"\b{name}\b", "I", out).rstrip("?").strip()


class Variants:
    """Patches of the retriever and of the service's cohesion step, switched per variant."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.query = ""
        self.variant: dict[str, Any] = {}

    @contextmanager
    def installed(self):
        retriever = l0_retriever.L0Retriever
        orig_vector, orig_tokens = retriever.query_vector, retriever._query_tokens
        orig_search, orig_cohere = service_module.ContextEngineService.search_memory, service_module.cohere_sessions
        state = self

        def query_vector(self: Any, typed: TypedQuery) -> np.ndarray:
            v = state.variant
            if v.get("strip") in ("dense", "both"):
                typed = TypedQuery(text=strip_names(typed.text, state.names) or typed.text, hints=typed.hints)
            vector = orig_vector(self, typed)
            extra = first_person(typed.text, state.names) if "first_person" in v else None
            if extra is None:
                return vector
            other = embed_queries(self.embedder, [extra])[0].astype(np.float32)
            return other if v["first_person"] == "only" else vector + float(v["first_person"]) * other

        def query_tokens(self: Any, text: str, partitions: list[str]) -> list[str]:
            if state.variant.get("strip") in ("lexical", "both"):
                text = strip_names(text, state.names) or text
            return orig_tokens(self, text, partitions)

        def search_memory(self: Any, ctx: Any, query: str, *args: Any, **kwargs: Any) -> Any:
            state.query = query
            return orig_search(self, ctx, query, *args, **kwargs)

        def cohere(blocks: Any, graph: Any = None, **kwargs: Any) -> Any:
            if "cohesion_list" in state.variant and is_list_question(state.query):
                kwargs["gain"] = float(state.variant["cohesion_list"])
            return orig_cohere(blocks, graph, **kwargs)

        retriever.query_vector, retriever._query_tokens = query_vector, query_tokens
        service_module.ContextEngineService.search_memory, service_module.cohere_sessions = search_memory, cohere
        try:
            yield self
        finally:
            retriever.query_vector, retriever._query_tokens = orig_vector, orig_tokens
            service_module.ContextEngineService.search_memory = orig_search
            service_module.cohere_sessions = orig_cohere


VARIANTS: list[dict[str, Any]] = [
    {}, {"strip": "dense"}, {"strip": "lexical"}, {"strip": "both"},
    {"first_person": 0.5}, {"first_person": 1.0}, {"first_person": "only"},
    {"cohesion_list": 0.0}, {"cohesion_list": 0.04}, {"cohesion_list": 0.16},
]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", type=Path, default=BENCH_DIR)
    parser.add_argument("--stores", type=Path, required=True, help="context_budget_loo.py --stores DIR (built there)")
    parser.add_argument("--out-json", type=Path, default=None)
    args = parser.parse_args(argv)
    convs = load_locomo(args.bench_dir / LOCOMO_FILE)
    stores = {c["sample_id"]: build(c, args.stores / c["sample_id"], reuse=True) for c in convs}
    names = [json.dumps(v, sort_keys=True) for v in VARIANTS]
    per: dict[str, dict[str, Any]] = {n: {} for n in names}
    load, started, cpu = [round(x, 2) for x in os.getloadavg()], time.perf_counter(), time.process_time()
    variants = Variants()
    with variants.installed():
        for name, variant in zip(names, VARIANTS, strict=True):
            variants.variant = variant
            for conv in convs:
                variants.names = list(conv["speakers"])
                per[name][conv["sample_id"]] = score(stores[conv["sample_id"]], conv, [10, 25])
            print(name, round(sum(r[10] for c in per[name].values() for _, r in c) /
                              sum(len(c) for c in per[name].values()), 4), flush=True)
    for svc in stores.values():
        svc.close()
    return finish_report(loo_report(per, [10, 25], names), load, started, cpu, args.out_json)


if __name__ == "__main__":
    main()

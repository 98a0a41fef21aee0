"""Tables of the knowledge benchmark (``knowledge_bench.py``): Rich for the terminal,
Markdown for docs/benchmarks.md. Both read the result dict the benchmark writes as JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

TARGET_P95_MS = 30.0
TARGET_TOKENS = 4_000
TOP_K = 5


def fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def print_tables(console: Console, result: dict[str, Any]) -> None:
    saves = Table(title="Save throughput")
    for col in ("path", "items", "items/s", "p50 ms", "p95 ms", "note"):
        saves.add_column(col, justify="right" if col not in ("path", "note") else "left")
    http = result.get("http")
    if http:
        saves.add_row(
            "HTTP POST /api/knowledge",
            fmt_int(http["ok"]),
            f"{http['items_per_s']:.1f}",
            f"{http['latency_p50_ms']:.1f}",
            f"{http['latency_p95_ms']:.1f}",
            f"{http['clients']} clients, {http['errors']} errors",
        )
    one = result.get("inprocess_save")
    if one is None:  # --quality-only
        print_quality(console, result)
        return
    saves.add_row(
        "hub.save (in process)",
        fmt_int(one["items"]),
        f"{one['items_per_s']:.1f}",
        f"{one['latency_p50_ms']:.1f}",
        f"{one['latency_p95_ms']:.1f}",
        "one fsynced transaction each",
    )
    for size, bulk in result["bulk"].items():
        saves.add_row(
            f"bulk load to {fmt_int(int(size))}",
            fmt_int(bulk["items"]),
            f"{bulk['items_per_s']:.1f}",
            "",
            "",
            f"hub.save_many, {bulk['calls']} calls (store + index catch-up)",
        )
    console.print(saves)

    search = Table(title=f"Search (top_k={TOP_K}, min_score=3); ms; LLM = LocalAgent routing")
    for col in (
        "size",
        "principal",
        "visible",
        "p50 no-LLM",
        "p95 no-LLM",
        "recall p95",
        "rest p95",
        "mean sync/recall/prompt/fetch/other",
        "LLM p50",
        "total p95",
        "tokens mean/max",
        "naive tokens",
        "target ms / tokens",
    ):
        search.add_column(col, justify="right")
    for size, per in result["search"].items():
        for who, s in per.items():
            ok_ms = s["no_llm_p95_ms"] <= TARGET_P95_MS
            ok_tok = s["prompt_tokens_max"] <= TARGET_TOKENS
            search.add_row(
                fmt_int(int(size)),
                who,
                fmt_int(s["visible_items"]),
                f"{s['no_llm_p50_ms']:.1f}",
                f"{s['no_llm_p95_ms']:.1f}",
                f"{s['recall_p95_ms']:.1f}",
                f"{s['rest_p95_ms']:.1f}",
                "/".join(
                    f"{s['stage_mean_ms'][k]:.1f}"
                    for k in ("sync", "recall", "prompt", "fetch", "other")
                ),
                f"{s['llm_p50_ms']:.1f}",
                f"{s['total_p95_ms']:.1f}",
                f"{s['prompt_tokens_mean']:.0f}/{s['prompt_tokens_max']}",
                fmt_int(s["naive_prompt_tokens"]),
                ("[green]ok[/]" if ok_ms else "[red]miss[/]")
                + " / "
                + ("[green]ok[/]" if ok_tok else "[red]miss[/]"),
            )
    console.print(search)
    print_quality(console, result)


def print_quality(console: Console, result: dict[str, Any]) -> None:
    quality = Table(title="LoCoMo recall@5 of evidence dia_ids; engine / BM25 by category")
    for col in (
        "corpus",
        "docs",
        "questions",
        "ceiling",
        "engine",
        "recall stage",
        "BM25",
        "stemmed BM25",
    ):
        quality.add_column(col, justify="left" if col == "corpus" else "right")
    for cat in ("1", "2", "3", "4"):
        quality.add_column(f"cat {cat}", justify="right")
    for name, q in result["quality"].items():
        cats = [
            f"{v['engine']:.2f}/{v['bm25']:.2f} n={v['n']}"
            if (v := q["by_category"].get(c))
            else ""
            for c in ("1", "2", "3", "4")
        ]
        quality.add_row(
            name,
            fmt_int(q["documents"]),
            fmt_int(q["questions"]),
            f"{q.get('ceiling', 1.0):.3f}",
            f"{q['engine_recall@5']:.3f}",
            f"{q['recall_stage_recall@5']:.3f}",
            f"{q['bm25_recall@5']:.3f}",
            f"{q.get('bm25s_recall@5', float('nan')):.3f}",
            *cats,
        )
    console.print(quality)
    if "loco" in result:
        folds = Table(title="Leave one conversation out: vector weight chosen on the other four")
        for col in ("held out", "questions", "weight", "recall@5", "stemmed BM25", "ratio"):
            folds.add_column(col, justify="left" if col == "held out" else "right")
        for f in result["loco"]["folds"]:
            folds.add_row(
                f["held_out"],
                str(f["questions"]),
                str(f["chosen_weight"]),
                f"{f['recall@5']:.3f}",
                f"{f['bm25s_recall@5']:.3f}",
                f"{f['ratio']:.3f}",
            )
        console.print(folds)


def markdown_tables(result: dict[str, Any]) -> str:
    """The result tables as Markdown, for docs/benchmarks.md."""
    out = ["| path | items | items/s | p50 ms | p95 ms |", "|---|---:|---:|---:|---:|"]
    http = result.get("http")
    if http:
        out.append(
            f"| HTTP `POST /api/knowledge`, {http['clients']} clients ({http['errors']} errors) "
            f"| {http['ok']:,} | {http['items_per_s']:.1f} | {http['latency_p50_ms']:.1f} "
            f"| {http['latency_p95_ms']:.1f} |"
        )
    one = result.get("inprocess_save")
    if one is None:  # --quality-only
        return "\n".join(quality_markdown(result)) + "\n"
    out.append(
        f"| `hub.save` in process, one at a time | {one['items']:,} | {one['items_per_s']:.1f} "
        f"| {one['latency_p50_ms']:.1f} | {one['latency_p95_ms']:.1f} |"
    )
    for size, bulk in result["bulk"].items():
        out.append(
            f"| `hub.save_many` up to {int(size):,} ({bulk['calls']} calls) | {bulk['items']:,} "
            f"| {bulk['items_per_s']:.1f} | | |"
        )
    out += [
        "",
        "| size | principal | visible | p50 / p95 no-LLM ms | recall p95 | mean sync / recall / "
        "prompt / fetch / other ms | LLM p50 ms | total p95 ms | routing tokens mean / max "
        "| naive prompt tokens | CPU share |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, per in result["search"].items():
        for who, s in per.items():
            stages = " / ".join(
                f"{s['stage_mean_ms'][k]:.1f}"
                for k in ("sync", "recall", "prompt", "fetch", "other")
            )
            out.append(
                f"| {int(size):,} | {who} | {s['visible_items']:,} | {s['no_llm_p50_ms']:.1f} / "
                f"**{s['no_llm_p95_ms']:.1f}** | {s['recall_p95_ms']:.1f} | {stages} "
                f"| {s['llm_p50_ms']:.1f} | {s['total_p95_ms']:.1f} "
                f"| {s['prompt_tokens_mean']:.0f} / **{s['prompt_tokens_max']:,}** "
                f"| {s['naive_prompt_tokens']:,} | {s.get('cpu_share', float('nan')):.2f} |"
            )
    out += ["", *quality_markdown(result)]
    return "\n".join(out) + "\n"


def quality_markdown(result: dict[str, Any]) -> list[str]:
    """The LoCoMo quality table and, when run, the leave-one-conversation-out folds."""
    out = [
        "| corpus | docs | questions | ceiling | engine | recall stage only | BM25 "
        "| stemmed BM25 | cat 1 | cat 2 | cat 3 | cat 4 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, q in result["quality"].items():
        cats = " | ".join(
            f"{v['engine']:.2f} / {v['bm25']:.2f} (n={v['n']})"
            if (v := q["by_category"].get(c))
            else ""
            for c in ("1", "2", "3", "4")
        )
        out.append(
            f"| {name} | {q['documents']:,} | {q['questions']:,} | {q.get('ceiling', 1.0):.3f} "
            f"| **{q['engine_recall@5']:.3f}** "
            f"| {q['recall_stage_recall@5']:.3f} | {q['bm25_recall@5']:.3f} "
            f"| **{q.get('bm25s_recall@5', float('nan')):.3f}** | {cats} |"
        )
    loco = result.get("loco")
    if loco:
        out += [
            "",
            "| held-out conversation | questions | weight chosen on the other 4 | recall@5 "
            "| stemmed BM25 | ratio |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for f in loco["folds"]:
            out.append(
                f"| {f['held_out']} | {f['questions']} | {f['chosen_weight']} "
                f"| {f['recall@5']:.3f} | {f['bm25s_recall@5']:.3f} | {f['ratio']:.3f} |"
            )
        out.append(
            f"| **mean (stdev)** | | | **{loco['heldout_recall@5_mean']:.3f}** "
            f"({loco['heldout_recall@5_stdev']:.3f}) | | **{loco['heldout_ratio_mean']:.3f}** "
            f"({loco['heldout_ratio_min']:.3f}–{loco['heldout_ratio_max']:.3f}) |"
        )
    return out


__all__ = ["TARGET_P95_MS", "TARGET_TOKENS", "TOP_K", "markdown_tables", "print_tables"]

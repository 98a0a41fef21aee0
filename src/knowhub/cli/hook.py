"""``knowhub hook EVENT``: the command coding-agent hooks run (see
:mod:`knowhub.integrations.hook_events`).

Runnable as ``python -m knowhub.cli.hook EVENT`` without loading the Typer CLI: the hook
settings ``knowhub hooks install`` writes use that form, and ``knowhub hook`` reaches
:func:`run` through ``FAST_COMMANDS`` in :mod:`knowhub.cli.app`. Either way a hook process
imports only the stdlib, :mod:`knowhub.agent`, ``knowhub.client`` with its ``http.client``
backend and, to decode answers, the engines' model modules
(tests/cli/test_startup_imports.py checks the list; benchmarks/startup_bench.py times it).
"""

from __future__ import annotations

import os
import sys


def skip_unused_imports(environ: dict[str, str] | None = None) -> None:
    """Keep this process from importing what it never uses: ``ssl``, which ``http.client``
    imports eagerly (~10 ms of CPU), unless the server is reached over https. Call it only
    in a process of its own (it blocks the name in ``sys.modules``); a module imported
    already is left alone."""
    url = (os.environ if environ is None else environ).get("KNOWHUB_URL") or ""
    if not url.lower().startswith("https:"):
        sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]


def run(argv: list[str]) -> int:
    """``knowhub hook ARGS`` as a process of its own (``python -m`` or the fast CLI path)."""
    skip_unused_imports()
    from knowhub.integrations.hook_events import main

    return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))

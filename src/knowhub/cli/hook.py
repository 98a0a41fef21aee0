"""``knowhub hook EVENT``: the command coding-agent hooks run (see
:mod:`knowhub.integrations.hook_events`).

Runnable as ``python -m knowhub.cli.hook EVENT`` without loading the Typer CLI: the hook
settings ``knowhub hooks install`` writes use that form, and ``knowhub hook`` reaches
:func:`run` through ``FAST_COMMANDS`` in :mod:`knowhub.cli.app`. Either way a hook process
imports only the stdlib, :mod:`knowhub.agent`, ``knowhub.client`` with its standard-library
backend and, to decode answers, the engines' model modules
(tests/cli/test_startup_imports.py checks the list; benchmarks/startup_bench.py times it).
"""

from __future__ import annotations

import sys


def run(argv: list[str]) -> int:
    """``knowhub hook ARGS`` as a process of its own (``python -m`` or the fast CLI path)."""
    from knowhub.integrations.hook_events import main

    return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))

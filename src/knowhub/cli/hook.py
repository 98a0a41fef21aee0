"""``knowhub hook EVENT``: the command coding-agent hooks run (see
:mod:`knowhub.integrations.hook_events`).

Runnable as ``python -m knowhub.cli.hook EVENT`` without loading the Typer CLI: the
hook settings ``knowhub hooks install`` writes use that form, so a hook process imports
only the stdlib, :mod:`knowhub.agent` and, when it calls the server, ``knowhub.client``.
"""

from __future__ import annotations

import sys

from knowhub.integrations.hook_events import main

if __name__ == "__main__":
    sys.exit(main())

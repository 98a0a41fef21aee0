"""``python -m knowhub.mcp [--data DIR] ...``: the same as ``knowhub mcp`` (for MCP client
configurations that start a Python module rather than a console script)."""

from __future__ import annotations

import typer

from knowhub.cli.mcp import mcp


def main() -> None:
    """Run ``knowhub mcp`` with this process's arguments."""
    typer.run(mcp)


if __name__ == "__main__":
    main()

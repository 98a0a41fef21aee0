"""``knowhub mcp``: run the MCP server (stdio by default, streamable HTTP on request).

Over stdio, stdout carries the protocol: this command prints nothing there (messages go to
stderr), so an MCP client can start it directly.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from knowhub.cli.errors import handle_errors
from knowhub.config import Settings
from knowhub.errors import ConfigError

#: Default port of the streamable-HTTP MCP endpoint (the HTTP API defaults to 8765).
DEFAULT_MCP_PORT = 8766


class Transport(str, Enum):  # noqa: UP042 - typer needs a str Enum for choices
    """How the MCP client reaches the server."""

    stdio = "stdio"
    http = "http"


def load_mcp_settings(config: Path | None, data: Path | None, host: str | None, port: int | None) -> Settings:
    """Settings with the command-line overrides (host and port only matter for HTTP).

    Raises:
        ConfigError: the config file cannot be used, or the port is out of range.
    """
    settings = Settings.load(config, data_dir=data)
    updates: dict[str, object] = {"port": DEFAULT_MCP_PORT if port is None else port}
    if host is not None:
        updates["host"] = host
    server = settings.server.model_copy(update=updates)
    if not 0 <= server.port <= 65_535:
        raise ConfigError(f"port must be between 0 and 65535, got {server.port}")
    return settings.model_copy(update={"server": server})


@handle_errors
def mcp(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.")] = None,
    data: Annotated[Path | None, typer.Option("--data", "-d", help="Data directory.")] = None,
    transport: Annotated[Transport, typer.Option("--transport", "-t", help="stdio or http (streamable HTTP).")] = Transport.stdio,
    host: Annotated[str | None, typer.Option("--host", help="HTTP: interface to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option("--port", "-p", help=f"HTTP: TCP port (default {DEFAULT_MCP_PORT}).")] = None,
    principal: Annotated[
        str | None,
        typer.Option("--principal", envvar="KNOWHUB_MCP_PRINCIPAL",
                     help="Principal the tools act for (default auth.default_principal)."),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option("--key", envvar="KNOWHUB_MCP_KEY", show_default=False,
                     help="Act as the principal of this configured API key (prefer the env variable)."),
    ] = None,
) -> None:
    """Serve the knowhub agent tools over MCP (knowledge, keyword tree, context memory)."""
    from knowhub.mcp import build_http_app, build_mcp_server, resolve_principal
    from knowhub.mcp.server import HTTP_PATH

    settings = load_mcp_settings(config, data, host, port)
    acting = resolve_principal(settings, principal=principal, key=key)
    server = build_mcp_server(settings, principal=acting)
    if transport is Transport.stdio:
        server.run("stdio")
        return

    import logging

    import uvicorn

    from knowhub.server.lifecycle import configure_logging

    # JSON lines on stderr as with `knowhub serve`: warnings, and the audit of delegated calls
    configure_logging("warning")
    logging.getLogger("knowhub.audit").setLevel(logging.INFO)
    app = build_http_app(server, settings, principal=acting)
    bind = settings.server
    url_host = f"[{bind.host}]" if ":" in bind.host and not bind.host.startswith("[") else bind.host
    who = f"{len(settings.auth.keys)} API key(s)" if settings.auth.keys else f"no API keys, every call is {acting.id}"
    print(
        f"knowhub MCP on http://{url_host}:{bind.port}{HTTP_PATH} "
        f"(data: {Path(settings.data_dir).resolve()}; {who})",
        file=sys.stderr,
    )
    uvicorn.run(app, host=bind.host, port=bind.port, log_level="warning")


__all__ = ["DEFAULT_MCP_PORT", "Transport", "load_mcp_settings", "mcp"]

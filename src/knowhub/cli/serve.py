"""``knowhub serve``: run the HTTP API (all engines' routers) with uvicorn.

Startup order, so that an operator sees one clear line for each way a start can fail and
"listening" only when the server really answers: bind the port (busy: exit 2), open every
engine and load the sample (cannot open: exit 1), then start uvicorn on the bound socket
and print "listening" once it serves.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from knowhub.cli.errors import fail, handle_errors
from knowhub.config import Settings
from knowhub.errors import ConfigError

#: Exit code of ``knowhub serve`` when the port is already taken.
EXIT_PORT_IN_USE = 2

_LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def load_serve_settings(
    config: Path | None,
    data: Path | None,
    host: str | None,
    port: int | None,
    log_level: str | None,
) -> Settings:
    """Settings from the config file and environment, with the command-line overrides on top.

    Raises:
        ConfigError: the file cannot be used, or the port or log level is invalid.
    """
    settings = Settings.load(config, data_dir=data)
    server_updates: dict[str, Any] = {}
    if host is not None:
        server_updates["host"] = host
    if port is not None:
        server_updates["port"] = port
    if log_level is not None:
        server_updates["log_level"] = log_level.lower()
    server = settings.server.model_copy(update=server_updates)
    if not 0 <= server.port <= 65_535:
        raise ConfigError(f"port must be between 0 and 65535, got {server.port}")
    if server.log_level.lower() not in _LOG_LEVELS:
        raise ConfigError(
            f"log level must be one of {', '.join(_LOG_LEVELS)}, got {server.log_level!r}"
        )
    return settings.model_copy(update={"server": server})


@handle_errors
def serve(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="TOML config file.")] = None,
    data: Annotated[Path | None, typer.Option("--data", "-d", help="Data directory.")] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Interface to bind (default 127.0.0.1).")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", "-p", help="TCP port (default 8765).")] = None,
    log_level: Annotated[str | None, typer.Option("--log-level", help="uvicorn log level.")] = None,
    no_sample: Annotated[
        bool, typer.Option("--no-sample", help="Do not load the sample knowledge base into an empty data dir.")
    ] = False,
) -> None:
    """Serve the HTTP API. Without API keys it only binds to loopback.

    Settings come from --config (TOML), KNOWHUB_* variables and these flags; with nothing
    configured everything runs offline in ./knowhub-data. An empty data dir first gets a
    small bilingual sample (unless --no-sample or server.load_sample = false).

    Example: knowhub serve --config knowhub.toml --port 8765
    """
    import uvicorn

    from knowhub.server import check_bind_allowed, create_app
    from knowhub.server.app import ENGINE_BUILDERS
    from knowhub.server.lifecycle import close_engines, configure_logging, open_engines, try_urls

    settings = load_serve_settings(config, data, host, port, log_level)
    check_bind_allowed(settings)
    server = settings.server
    sock = bind_socket(server.host, server.port)
    try:
        configure_logging(server.log_level)
        opened = open_engines(settings, ENGINE_BUILDERS, load_sample=server.load_sample and not no_sample)
        try:
            app = create_app(settings, engines=opened.engines, own_engines=True)
            app.state.lifecycle.sample_report = opened.sample_report
            auth = f"{len(settings.auth.keys)} API key(s)" if settings.auth.keys else (
                f"no API keys, every request is {settings.auth.default_principal}"
            )
            base = f"http://{_url_host(server.host)}:{sock.getsockname()[1]}"

            def announce() -> None:
                typer.echo(f"knowhub listening on {base} (data: {Path(settings.data_dir).resolve()}; {auth})")
                typer.echo("try: " + "  ".join(try_urls(base)))

            uv_config = uvicorn.Config(app, host=server.host, port=server.port, log_level=server.log_level.lower(),
                                       log_config=None, access_log=False, timeout_graceful_shutdown=10)
            announcing_server(uv_config, announce).run(sockets=[sock])
        finally:
            close_engines(opened.owned)  # the app's shutdown closed them already; closing is idempotent
    finally:
        sock.close()


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (uvicorn listens on it).

    Raises:
        typer.Exit: code 2 with one line when the port is in use; code 1 when the address
            cannot be bound for another reason.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise fail(f"cannot bind to {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: restart over TIME_WAIT
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise fail(
                f"knowhub: port {port} on {host} is already in use; stop the other server "
                "or choose another port with --port",
                code=EXIT_PORT_IN_USE,
            ) from None
        raise fail(f"knowhub: cannot bind to port {port} on {host}: {exc.strerror or exc}") from None
    return sock


def announcing_server(config: Any, announce: Callable[[], None]) -> Any:
    """A uvicorn server that calls ``announce`` once it accepts connections (after the
    lifespan started and the socket listens), never before."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit:
                announce()

    return AnnouncingServer(config)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


__all__ = ["EXIT_PORT_IN_USE", "announcing_server", "bind_socket", "load_serve_settings", "serve"]

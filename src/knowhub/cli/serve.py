"""``knowhub serve``: run the HTTP API (all engines' routers) with uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from knowhub.cli.errors import handle_errors
from knowhub.config import Settings
from knowhub.errors import ConfigError

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

    settings = load_serve_settings(config, data, host, port, log_level)
    check_bind_allowed(settings)
    from knowhub.server.lifecycle import configure_logging, try_urls

    configure_logging(settings.server.log_level)
    app = create_app(settings, load_sample=settings.server.load_sample and not no_sample)
    server = settings.server
    auth = f"{len(settings.auth.keys)} API key(s)" if settings.auth.keys else (
        f"no API keys, every request is {settings.auth.default_principal}"
    )
    typer.echo(
        f"knowhub listening on http://{_url_host(server.host)}:{server.port} "
        f"(data: {Path(settings.data_dir).resolve()}; {auth})"
    )
    base = f"http://{_url_host(server.host)}:{server.port}"
    typer.echo("try: " + "  ".join(try_urls(base)))
    uvicorn.run(app, host=server.host, port=server.port, log_level=server.log_level.lower(),
                log_config=None, access_log=False, timeout_graceful_shutdown=10)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


__all__ = ["load_serve_settings", "serve"]

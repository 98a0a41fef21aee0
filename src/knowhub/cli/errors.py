"""One place where the CLI turns errors into one clear line and an exit code."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from knowhub.errors import KnowhubError, redact_paths

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` in red on stderr and return the Exit to raise."""
    from rich.console import Console  # here: a command that succeeds never loads rich
    from rich.text import Text

    # Text, not markup: a message such as "[1, 2]" must print as it is.
    Console(stderr=True).print(Text.assemble(("error: ", "bold red"), message), highlight=False, soft_wrap=True)
    return typer.Exit(code)


def handle_errors(func: F) -> F:
    """Decorator for commands: KnowhubError and OSError become one line, exit 1; absolute
    paths are shown relative to the working directory or by their last part."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KnowhubError as exc:
            raise fail(redact_paths(str(exc), Path.cwd()) or type(exc).__name__) from None
        except OSError as exc:
            line = f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
            raise fail(redact_paths(line, Path.cwd())) from None
        except KeyboardInterrupt:
            raise fail("interrupted", code=130) from None

    return wrapper  # type: ignore[return-value]

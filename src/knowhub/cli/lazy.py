"""Sub-commands whose modules load only when they run.

Agent hooks spawn ``knowhub hook ...`` once per prompt, and ``knowhub --help`` should be
instant: neither may import the engines, FastAPI or the MCP SDK that other sub-commands
need. The root group therefore knows each sub-command by name, target and one-line help
(:data:`knowhub.cli.app.COMMANDS`) and imports the target's module only when that command
is resolved to run (or to show its own ``--help``). The top-level help lists every
command from the one-line help without importing anything.

A target is ``"module:attribute"``: a :class:`typer.Typer` becomes a group (as with
``app.add_typer(sub, name=...)``), a function a command (as with ``app.command(name)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo, TyperInfo

if TYPE_CHECKING:  # Typer carries its own copy of click; these are its types
    from typer._click import Command, Context, HelpFormatter


def load_target(target: str) -> Any:
    """The object that ``"module:attribute"`` names (imports the module)."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


def build_command(name: str, target: str, *, rich_markup_mode: Any, suggest_commands: bool) -> Command:
    """The click command for ``target``, built exactly as Typer builds a registered one."""
    obj = load_target(target)
    if isinstance(obj, typer.Typer):
        return typer.main.get_group_from_info(
            TyperInfo(obj, name=name),
            pretty_exceptions_short=True,
            rich_markup_mode=rich_markup_mode,
            suggest_commands=suggest_commands,
        )
    return typer.main.get_command_from_info(
        CommandInfo(name=name, callback=obj),
        pretty_exceptions_short=True,
        rich_markup_mode=rich_markup_mode,
    )


class LazyCommands(MutableMapping[str, "Command"]):
    """A group's command table: every name is known, each command is built on first access."""

    def __init__(self, loaded: Mapping[str, Command], specs: Mapping[str, tuple[str, str]],
                 build: Any) -> None:
        self._loaded: dict[str, Command] = dict(loaded)
        self._specs = dict(specs)
        self._build = build
        self._order = [*self._loaded, *(name for name in self._specs if name not in self._loaded)]

    def __getitem__(self, name: str) -> Command:
        found = self._loaded.get(name)
        if found is None:
            if name not in self._specs:
                raise KeyError(name)
            found = self._loaded[name] = self._build(name, self._specs[name][0])
        return found

    def __setitem__(self, name: str, command: Command) -> None:
        if name not in self._loaded and name not in self._specs:
            self._order.append(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self._loaded and name not in self._specs:
            raise KeyError(name)
        self._loaded.pop(name, None)
        self._specs.pop(name, None)
        self._order.remove(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def peek(self, name: str) -> Command | None:
        """The built command, else a stand-in carrying only the name and one-line help."""
        found = self._loaded.get(name)
        if found is not None:
            return found
        spec = self._specs.get(name)
        return None if spec is None else TyperCommand(name, help=spec[1], short_help=spec[1])

    def is_loaded(self, name: str) -> bool:
        return name in self._loaded


class LazyTyperGroup(TyperGroup):
    """A Typer group whose :attr:`lazy_commands` load on first use (see the module doc)."""

    #: name → ("module:attribute", one-line help); set by :func:`lazy_group`.
    lazy_commands: ClassVar[Mapping[str, tuple[str, str]]] = {}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = LazyCommands(self.commands, self.lazy_commands, self._build)
        self._listing = False

    def _build(self, name: str, target: str) -> Command:
        return build_command(name, target, rich_markup_mode=self.rich_markup_mode,
                             suggest_commands=self.suggest_commands)

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # names in registration order, nothing built

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if self._listing:  # the help lists names and one-line help only: import nothing
            return self.commands.peek(cmd_name)  # type: ignore[attr-defined]
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def lazy_group(commands: Mapping[str, tuple[str, str]]) -> type[LazyTyperGroup]:
    """A :class:`LazyTyperGroup` class for ``typer.Typer(cls=...)`` with these commands."""
    return type("KnowhubLazyGroup", (LazyTyperGroup,), {"lazy_commands": dict(commands)})


__all__ = ["LazyCommands", "LazyTyperGroup", "build_command", "lazy_group", "load_target"]

"""Every CLI command is documented in docs/cli.md, has help text, and its --help works;
every ``knowhub ...`` line in the docs' shell examples names real commands and options."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from knowhub.cli.app import app
from tests.docs.markdown import DOCS, REPO, code_blocks, read

CLI_DOC = DOCS / "cli.md"
SHELL_LANGS = {"", "bash", "sh", "shell", "console", "zsh"}


def _commands() -> list[tuple[str, Any]]:
    """(path, click command) for the root and every group and command below it."""
    root = typer.main.get_command(app)

    def walk(cmd: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
        yield " ".join(path), cmd
        subs = getattr(cmd, "commands", None) or {}
        for name in sorted(subs):
            yield from walk(subs[name], [*path, name])

    return list(walk(root, ["knowhub"]))


COMMANDS = _commands()
GROUPS = [path for path, cmd in COMMANDS if getattr(cmd, "commands", None)]


def test_the_cli_has_the_expected_groups() -> None:
    paths = {path for path, _ in COMMANDS}
    for expected in ("knowhub serve", "knowhub mcp", "knowhub tree search", "knowhub knowledge search",
                     "knowhub context commit", "knowhub admin export"):
        assert expected in paths
    assert len(paths) > 30


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS if path != "knowhub"])
def test_every_command_is_in_cli_md(path: str) -> None:
    # "knowhub tree add" must not be satisfied by "knowhub tree add-info" alone
    pattern = re.escape(path) + r"(?![\w-])"
    assert re.search(pattern, read(CLI_DOC)), (
        f"`{path}` is not documented in docs/cli.md: add a section with a one-line "
        "description and an example"
    )


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_command_and_parameter_has_help(path: str, cmd: Any) -> None:
    assert (cmd.help or cmd.short_help or "").strip(), f"{path} has no help text"
    for param in cmd.params:
        if param.name in {"help"}:
            continue
        assert (getattr(param, "help", None) or "").strip(), f"{path}: {param.opts} has no help text"


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_help_exits_zero_and_shows_the_help(path: str, cmd: Any) -> None:
    result = CliRunner().invoke(app, [*path.split()[1:], "--help"])
    assert result.exit_code == 0, result.output
    first_line = (cmd.help or "").strip().splitlines()[0]
    words = re.findall(r"\w+", first_line)[:3]
    flat = " ".join(result.output.split())
    assert all(word in flat for word in words), f"{path} --help does not show its help:\n{result.output}"
    for sub in getattr(cmd, "commands", None) or {}:
        assert sub in result.output, f"{path} --help does not list {sub}"


def test_the_console_script_entry_point_answers_help() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from knowhub.cli.app import main; main()", "--help"],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )
    assert done.returncode == 0, done.stderr
    for group in ("serve", "mcp", "tree", "knowledge", "context", "admin"):
        assert group in done.stdout


def test_version_prints_the_package_version() -> None:
    import knowhub

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"knowhub {knowhub.__version__}"


# --------------------------------------------------------------------------- examples


def _doc_files() -> list[Any]:
    return [REPO / "README.md", *sorted(REPO.glob("README.*.md")), *sorted(DOCS.glob("*.md"))]


def _shell_lines(text: str) -> Iterator[str]:
    """Commands of the shell code blocks, continuation lines joined."""
    for lang, lines in code_blocks(text):
        if lang not in SHELL_LANGS:
            continue
        joined = "\n".join(lines).replace("\\\n", " ")
        yield from joined.splitlines()


def _knowhub_invocations(line: str) -> Iterator[list[str]]:
    """Argument lists of every ``knowhub`` invocation in one shell line."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:
        return
    segment: list[str] = []
    for token in [*tokens, "&&"]:
        if token in {"&&", "||", ";", "|"}:
            while segment and re.match(r"^[A-Z_][A-Z0-9_]*=", segment[0]):
                segment.pop(0)  # VAR=value prefixes
            if segment and segment[0] == "knowhub":
                yield segment[1:]
            segment = []
        else:
            segment.append(token)


def _resolve(args: list[str]) -> str | None:
    """None when ``knowhub ARGS`` names real commands and options, else the problem."""
    cmd: Any = typer.main.get_command(app)
    path = ["knowhub"]
    i = 0
    while i < len(args):
        token = args[i]
        options = {opt: param for param in cmd.params for opt in [*param.opts, *param.secondary_opts]
                   if opt.startswith("-")}
        if token.startswith("-"):
            name = token.split("=", 1)[0]
            if name in {"--help", "--version"}:
                return None
            param = options.get(name)
            if param is None:
                return f"{' '.join(path)} has no option {name}"
            takes_value = not getattr(param, "is_flag", False) and "=" not in token
            i += 2 if takes_value else 1
            continue
        subs = getattr(cmd, "commands", None)
        if not subs:
            i += 1  # an argument of a leaf command
            continue
        if token not in subs:
            return f"{' '.join(path)} has no command {token!r}"
        cmd = subs[token]
        path.append(token)
        i += 1
    return None


def test_shell_examples_name_real_commands_and_options() -> None:
    problems: list[str] = []
    seen = 0
    for doc in _doc_files():
        if not doc.is_file():
            continue
        for line in _shell_lines(read(doc)):
            for args in _knowhub_invocations(line):
                seen += 1
                problem = _resolve(args)
                if problem:
                    problems.append(f"{doc.relative_to(REPO)}: `{line.strip()}`: {problem}")
    assert seen > 20, "no knowhub examples found; is the scanner broken?"
    assert not problems, "\n".join(problems)


def test_the_example_checker_catches_mistakes() -> None:
    assert _resolve(["tree", "--data", "./kt", "search", "python", "--json"]) is None
    assert _resolve(["tree", "serch", "python"]) == "knowhub tree has no command 'serch'"
    assert _resolve(["admin", "export", "x", "--include-secret"]) == "knowhub admin export has no option --include-secret"
    assert list(_knowhub_invocations("KH_PASS=x knowhub admin export b.tar.gz  # note")) == [
        ["admin", "export", "b.tar.gz"]
    ]
    assert list(_knowhub_invocations("pip install -e . && knowhub serve")) == [["serve"]]

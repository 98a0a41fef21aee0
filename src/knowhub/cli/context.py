"""``knowhub context``: the ContextEngine (seed 004 §10.1) on a local data dir.

Calls act for ``--account``/``--user``/``--agent``. Without ``--user`` and ``--agent`` they
act exactly as the HTTP API does for ``settings.auth.default_principal`` (with
``auth.default_memberships``). ``--user`` alone gives that user with its private agent space
(``agents/private-{user}``); ``--agent`` names a shared agent space explicitly (another
user's private space is refused). ``commit`` indexes before it returns, so a ``search``
right after finds the new memories.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from knowhub.cli.admin import ConfigOpt, DataOpt, console, load_settings, print_json
from knowhub.cli.errors import handle_errors
from knowhub.errors import InvalidInputError
from knowhub.scope import Principal, RequestContext, is_private_agent_id, parse_scope

app = typer.Typer(
    name="context",
    help=(
        "Session memory (ContextEngine): commit conversations, search and read memories.\n\n"
        "Examples:\n\n"
        "  knowhub context commit chat.json --user alice\n\n"
        "  knowhub context search '她在哪里工作' --user alice\n\n"
        "  knowhub context read ctx://default/users/alice/memories/entities/杭州 --level L2 --user alice\n\n"
        "  knowhub context edit ctx://default/users/alice/memories/entities/杭州 --abstract '她在杭州工作' --user alice\n\n"
        "  knowhub context delete ctx://default/users/alice/memories/entities/杭州 --user alice --yes"
    ),
    no_args_is_help=True,
)

AccountOpt = Annotated[str | None, typer.Option("--account", help="Account id (default: context.account_id of the settings).")]
UserOpt = Annotated[str | None, typer.Option("--user", "-u", help="User id (default: from auth.default_principal).")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Shared agent id (default: the user's private agent space).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _doc(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, list):
        return [_doc(v) for v in value]
    return value


def _context(settings: Any, account: str | None, user: str | None, agent: str | None) -> RequestContext:
    """The request context of a CLI call (see the module doc).

    Raises:
        InvalidInputError: ``agent`` names another user's private agent space.
    """
    from knowhub.server.routers.context import request_context

    if user is None and agent is None:
        auth = settings.auth
        default = request_context(Principal.of(auth.default_principal, auth.default_memberships), settings)
        return replace(default, account_id=account) if account else default
    if user is None:
        kind, ident = parse_scope(settings.auth.default_principal)
        user = request_context(Principal.of(f"{kind}:{ident}"), settings).user_id
    ctx = RequestContext(account or settings.context.account_id, user, agent_id=agent or "")
    if is_private_agent_id(ctx.agent_id) and ctx.shares_agent:
        raise InvalidInputError(f"--agent {agent}: that is another user's private agent space", agent=str(agent))
    return ctx


@contextmanager
def _service(config: Path | None, data: Path | None, account: str | None, user: str | None,
             agent: str | None) -> Iterator[tuple[Any, RequestContext]]:
    from knowhub.context import ContextEngineService

    settings = load_settings(config, data)
    ctx = _context(settings, account, user, agent)
    service = ContextEngineService.from_settings(settings)
    try:
        yield service, ctx
    finally:
        service.close()


@app.command("commit")
@handle_errors
def commit(
    file: Annotated[Path, typer.Argument(help="JSON: a list of {role, content} messages or {\"messages\": [...], \"session_id\": ...}.")],
    session_id: Annotated[str | None, typer.Option("--session-id", help="Session id (default: from the file or new).")] = None,
    account: AccountOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    data: DataOpt = None, config: ConfigOpt = None,
) -> None:
    """Commit a conversation: archive it, extract memories, index them.

    Example: knowhub context commit chat.json --account acme --user alice
    """
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{file} is not valid JSON: {exc.msg} (line {exc.lineno})", path=str(file)) from exc
    options: dict[str, Any] = {}
    if isinstance(doc, dict):
        messages = doc.get("messages")
        options.update({k: doc[k] for k in ("session_id", "session_time") if doc.get(k)})
    else:
        messages = doc
    if not isinstance(messages, list) or not messages:
        raise InvalidInputError(f"{file} holds no messages")
    if session_id:
        options["session_id"] = session_id
    with _service(config, data, account, user, agent) as (service, ctx):
        result = service.commit_session(ctx, messages, None, None, options)
        service.flush_index()
    written = [w.uri for w in result.write_results if getattr(w, "uri", None)]
    print_json({"status": result.status, "commit_id": result.commit_id, "memories": written, "stats": result.stats})


@app.command("search")
@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Most results.")] = 10,
    target_uri: Annotated[str | None, typer.Option("--target-uri", help="Search only below this URI.")] = None,
    categories: Annotated[list[str] | None, typer.Option("--category", help="Only this category; repeatable.")] = None,
    account: AccountOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    data: DataOpt = None, config: ConfigOpt = None, as_json: JsonOpt = False,
) -> None:
    """Search memories (abstracts; read a URI for more). Example: knowhub context search Rust"""
    with _service(config, data, account, user, agent) as (service, ctx):
        result = service.search_memory(ctx, query, target_uri=target_uri, categories=categories, top_k=top_k)
    doc = result.to_dict()
    if as_json:
        print_json(doc)
        return
    blocks = doc.get("blocks") or []
    if not blocks:
        console.print("no results")
        return
    table = Table()
    table.add_column("score", justify="right")
    table.add_column("uri", overflow="fold")
    table.add_column("abstract", overflow="fold")
    for block in blocks:
        score = block.get("score")
        table.add_row(f"{score:.3f}" if isinstance(score, (int, float)) else "", str(block.get("uri")),
                      str(block.get("abstract") or block.get("text") or ""))
    console.print(table)


@app.command("read")
@handle_errors
def read(
    uri: Annotated[str, typer.Argument(help="ctx:// URI.")],
    level: Annotated[str, typer.Option("--level", "-l", help="L0, L1 or L2.")] = "L1",
    relations: Annotated[int, typer.Option("--relations", help="Also expand up to N relations.")] = 0,
    account: AccountOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    data: DataOpt = None, config: ConfigOpt = None,
) -> None:
    """Read one memory at a level. Example: knowhub context read ctx://default/users/local/memories/entities/rust -l L2"""
    with _service(config, data, account, user, agent) as (service, ctx):
        block = service.read_memory(ctx, uri, level.upper(), relations > 0, relations)
    print_json(_doc(block))


@app.command("node")
@handle_errors
def node(
    uri: Annotated[str, typer.Argument(help="ctx:// URI.")],
    account: AccountOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    data: DataOpt = None, config: ConfigOpt = None,
) -> None:
    """Print a whole node (every level and its metadata)."""
    with _service(config, data, account, user, agent) as (service, ctx):
        found = service.get_node(ctx, uri)
    print_json(_doc(found))


@app.command("children")
@handle_errors
def children(
    uri: Annotated[str, typer.Argument(help="ctx:// URI of a node or directory.")],
    recursive: Annotated[bool, typer.Option("--recursive", "-r", help="The whole subtree.")] = False,
    depth: Annotated[int, typer.Option("--depth", help="Levels to list.")] = 1,
    account: AccountOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    data: DataOpt = None, config: ConfigOpt = None,
) -> None:
    """List children. Example: knowhub context children ctx://default/users/local/memories -r"""
    with _service(config, data, account, user, agent) as (service, ctx):
        found = service.list_children(ctx, uri, recursive=recursive, depth=depth)
    print_json(_doc(found))


@app.command("edit")
@handle_errors
def edit(
    uri: Annotated[str, typer.Argument(help="ctx:// URI of the memory.")],
    abstract: Annotated[str | None, typer.Option("--abstract", "--l0", help="New L0 abstract (one line).")] = None,
    overview: Annotated[str | None, typer.Option("--overview", "--l1", help="New L1 overview.")] = None,
    content: Annotated[str | None, typer.Option("--content", "--l2", help="New L2 content.")] = None,
    content_file: Annotated[Path | None, typer.Option("--content-file", help="Read the new L2 content from a UTF-8 file.")] = None,
    expected_version: Annotated[int | None, typer.Option("--expected-version", help="Refuse unless the memory is still at this version.")] = None,
    account: AccountOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    data: DataOpt = None, config: ConfigOpt = None,
) -> None:
    """Replace a memory's L0/L1/L2 text; the memory is re-indexed.

    Example: knowhub context edit ctx://default/users/alice/memories/preferences/tea --abstract "prefers green tea" --user alice
    """
    if content_file is not None:
        if content is not None:
            raise InvalidInputError("give --content or --content-file, not both")
        content = content_file.read_text(encoding="utf-8")
    with _service(config, data, account, user, agent) as (service, ctx):
        found = service.edit_node(ctx, uri, abstract=abstract, overview=overview, content=content,
                                  expected_version=expected_version)
        service.flush_index()
    print_json({"uri": found.uri, "version": found.version, "abstract": found.abstract})


@app.command("delete")
@handle_errors
def delete(
    uri: Annotated[str, typer.Argument(help="ctx:// URI of the memory (or directory, with --recursive).")],
    recursive: Annotated[bool, typer.Option("--recursive", "-r", help="Also delete everything below it.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    account: AccountOpt = None, user: UserOpt = None, agent: AgentOpt = None,
    data: DataOpt = None, config: ConfigOpt = None,
) -> None:
    """Delete a memory; it leaves search at once. Not undoable.

    Example: knowhub context delete ctx://default/users/alice/memories/preferences/tea --user alice --yes
    """
    if not yes and not typer.confirm(f"delete {uri}{' and everything below it' if recursive else ''}?"):
        raise typer.Exit(1)
    with _service(config, data, account, user, agent) as (service, ctx):
        service.delete_node(ctx, uri, recursive=recursive)
        service.flush_index()
    print_json({"deleted": uri, "recursive": recursive})


@app.command("flush")
@handle_errors
def flush(data: DataOpt = None, config: ConfigOpt = None) -> None:
    """Apply every pending index event now (e.g. after a crash). Example: knowhub context flush"""
    with _service(config, data, None, None, "default") as (service, _ctx):
        result = service.flush_index()
        stats = service.index_stats()
    print_json({"flushed": _doc(result), "index": stats})


__all__ = ["app"]

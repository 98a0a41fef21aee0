"""``knowhub knowledge``: the KnowledgeHub on a local data dir, acting as one principal.

Every command opens the hub of ``--data`` (or the configured data dir), acts as
``--principal`` (default ``settings.auth.default_principal``) with ``--member`` scopes
(default: those of the configured key for that principal, else
``settings.auth.default_memberships``) and prints JSON or a table. The publish right comes
from the same key (else ``auth.default_publish``). Visibility and permissions are the
engine's, exactly as over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from knowhub.cli.admin import ConfigOpt, DataOpt, console, load_settings, print_json
from knowhub.cli.errors import fail, handle_errors
from knowhub.errors import InvalidInputError
from knowhub.scope import Principal

app = typer.Typer(
    name="knowledge",
    help=(
        "Scoped knowledge and resources (KnowledgeHub) on a local data dir.\n\n"
        "Examples:\n\n"
        "  knowhub knowledge save --task '部署流程' --content '先 staging 再生产' --type strategy\n\n"
        "  knowhub knowledge search 部署 --top-k 3\n\n"
        "  knowhub knowledge update ID --helpful 'worked for the March release'"
    ),
    no_args_is_help=True,
)
resource_app = typer.Typer(name="resource", help="Resources (code, credentials, cookies) with encrypted secrets.",
                           no_args_is_help=True)
app.add_typer(resource_app, name="resource")

PrincipalOpt = Annotated[
    str | None, typer.Option("--principal", "-p", help="Act as this principal (default: auth.default_principal).")
]
MemberOpt = Annotated[
    list[str] | None, typer.Option("--member", "-m", help="Scope the principal belongs to; repeatable.")
]
AdminOpt = Annotated[list[str] | None, typer.Option("--admin-of", help="Scope the principal administers; repeatable.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@contextmanager
def _hub(config: Path | None, data: Path | None, principal: str | None, members: list[str] | None,
         admin_of: list[str] | None) -> Iterator[tuple[Any, Principal]]:
    from knowhub.knowledge import KnowledgeHub
    from knowhub.server.auth import local_principal

    settings = load_settings(config, data)
    who = local_principal(settings, principal, members, admin_of)
    hub = KnowledgeHub.from_settings(settings)
    try:
        yield hub, who
    finally:
        hub.close()


def _split(values: list[str] | None) -> list[str] | None:
    out = [part.strip() for v in values or [] for part in v.split(",") if part.strip()]
    return out or None


def _tags(values: list[str] | None) -> dict[str, str]:
    tags: dict[str, str] = {}
    for value in values or []:
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"--tag must look like key=value, got {value!r}")
        tags[key.strip()] = val.strip()
    return tags


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid JSON: {exc.msg} (line {exc.lineno})", path=str(path)) from exc


def _item_table(items: list[dict[str, Any]], *, score_key: str | None = None) -> Table:
    table = Table(show_lines=False)
    table.add_column("id", no_wrap=True)
    table.add_column("types")
    table.add_column("task")
    table.add_column("content", overflow="fold")
    table.add_column("scopes")
    table.add_column("quality" if score_key else "version", justify="right")
    for item in items:
        content = str(item.get("content", ""))
        table.add_row(
            str(item.get("id")), ",".join(item.get("types") or []), str(item.get("task", "")),
            content if len(content) <= 120 else content[:117] + "...", ",".join(item.get("scopes") or []),
            str(item.get(score_key) if score_key else item.get("version")),
        )
    return table


@app.command("search")
@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for (Chinese or English).")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Most results.")] = 5,
    min_score: Annotated[int, typer.Option("--min-score", help="Lowest quality score kept.")] = 3,
    types: Annotated[list[str] | None, typer.Option("--type", "-t", help="Only these types; repeatable.")] = None,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None, as_json: JsonOpt = False,
) -> None:
    """Search the knowledge the principal can see. Example: knowhub knowledge search 'SQLite 锁'"""
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        hits = [h.to_dict() for h in hub.search(who, query, top_k=top_k, min_score=min_score, types=_split(types))]
    if as_json:
        print_json(hits)
    elif not hits:
        console.print("no results")
    else:
        console.print(_item_table(hits, score_key="quality_score"))


@app.command("save")
@handle_errors
def save(
    task: Annotated[str | None, typer.Option("--task", help="The question or task this knowledge answers.")] = None,
    content: Annotated[str | None, typer.Option("--content", help="The knowledge itself.")] = None,
    types: Annotated[list[str] | None, typer.Option("--type", "-t", help="Type (strategy, tool, ...); repeatable.")] = None,
    scopes: Annotated[list[str] | None, typer.Option("--scope", "-s", help="Scope (public, team:x ...); repeatable.")] = None,
    score: Annotated[int | None, typer.Option("--score", help="Initial quality score 1-5.")] = None,
    tags: Annotated[list[str] | None, typer.Option("--tag", help="key=value tag; repeatable.")] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", help="JSON file with the knowledge body (or a list).")] = None,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Save knowledge from options or a JSON file (seed-002 body; a list saves many at once).

    Example: knowhub knowledge save --task 'Deploy' --content 'staging first' -t strategy -s public
    """
    if file is not None:
        body: Any = _read_json(file)
    else:
        if not task or not content:
            raise fail("give --task and --content, or --file", code=2)
        body = {"task": task, "content": content, "types": _split(types) or ["strategy"], "tags": _tags(tags)}
        if scopes:
            body["scopes"] = _split(scopes)
        if score is not None:
            body["score"] = score
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        saved = hub.save_many(who, body) if isinstance(body, list) else [hub.save(who, body)]
    print_json([k.to_dict() for k in saved] if isinstance(body, list) else saved[0].to_dict())


@app.command("get")
@handle_errors
def get(
    knowledge_id: Annotated[str, typer.Argument(help="Knowledge id.")],
    history: Annotated[bool, typer.Option("--history", help="Also print previous versions.")] = False,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Print one knowledge item. Example: knowhub knowledge get knowledge-20260101-1a2b3c4d"""
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        doc: dict[str, Any] = hub.get(who, knowledge_id).to_dict()
        if history:
            doc = {"item": doc, "history": hub.history(who, knowledge_id)}
    print_json(doc)


@app.command("list")
@handle_errors
def list_(
    limit: Annotated[int, typer.Option("--limit", "-n", help="Most items.")] = 10,
    types: Annotated[list[str] | None, typer.Option("--type", "-t", help="Only these types; repeatable.")] = None,
    scopes: Annotated[list[str] | None, typer.Option("--scope", "-s", help="Only these scopes; repeatable.")] = None,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None, as_json: JsonOpt = False,
) -> None:
    """List visible knowledge, newest first. Example: knowhub knowledge list -n 20 -s public"""
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        items = [k.to_dict() for k in hub.list(who, limit=limit, types=_split(types), scopes=_split(scopes))]
    if as_json:
        print_json(items)
    elif not items:
        console.print("no knowledge")
    else:
        console.print(_item_table(items))


@app.command("update")
@handle_errors
def update(
    knowledge_id: Annotated[str, typer.Argument(help="Knowledge id.")],
    helpful: Annotated[str | None, typer.Option("--helpful", help="Record a case where it helped.")] = None,
    harmful: Annotated[str | None, typer.Option("--harmful", help="Record a case where it misled.")] = None,
    score: Annotated[int | None, typer.Option("--score", help="New score 1-5 (owner/admin).")] = None,
    evolve: Annotated[str | None, typer.Option("--evolve", help="Feedback to rewrite the content (owner/admin).")] = None,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Give feedback or change score/content. Example: knowhub knowledge update ID --helpful 'fixed the lock'"""
    if helpful is None and harmful is None and score is None and evolve is None:
        raise fail("give at least one of --helpful, --harmful, --score, --evolve", code=2)
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        item = hub.update(who, knowledge_id, add_helpful_case=helpful, add_harmful_case=harmful,
                          update_score=score, evolve_feedback=evolve)
    print_json(item.to_dict())


@app.command("delete")
@handle_errors
def delete(
    knowledge_id: Annotated[str, typer.Argument(help="Knowledge id.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Delete an item (owner or scope admin; kept in the history). Example: knowhub knowledge delete ID -y"""
    if not yes and not typer.confirm(f"delete {knowledge_id}?"):
        raise fail("delete cancelled")
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        hub.delete(who, knowledge_id)
    console.print(f"deleted {knowledge_id}")


@app.command("slim")
@handle_errors
def slim(
    apply: Annotated[str | None, typer.Option("--apply", help="Apply the plan with this id (from an earlier run).")] = None,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Plan merging near-duplicates; apply the plan with --apply PLAN_ID.

    Examples: knowhub knowledge slim   then   knowhub knowledge slim --apply PLAN_ID
    """
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        plan = hub.slim(who, apply=apply is not None, plan_id=apply)
    print_json(plan.to_dict())


@app.command("extract")
@handle_errors
def extract(
    file: Annotated[Path, typer.Argument(help="JSON file: a list of {role, content} messages, or {\"messages\": [...]}.")],
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Extract knowledge from a conversation and save it. Example: knowhub knowledge extract chat.json"""
    doc = _read_json(file)
    messages = doc.get("messages") if isinstance(doc, dict) else doc
    if not isinstance(messages, list):
        raise InvalidInputError(f"{file} must hold a list of messages or an object with 'messages'")
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        saved = hub.extract(who, messages)
    print_json([k.to_dict() for k in saved])


@resource_app.command("save")
@handle_errors
def resource_save(
    resource_id: Annotated[str, typer.Option("--id", help="Resource id.")],
    title: Annotated[str, typer.Option("--title", help="Short title.")] = "",
    body: Annotated[str, typer.Option("--body", help="Public body (visible to every reader).")] = "",
    secure_body_file: Annotated[
        Path | None, typer.Option("--secure-body-file", help="File whose text is stored encrypted (secure_body).")
    ] = None,
    content_type: Annotated[str, typer.Option("--content-type", help="code, credential, cookie or other.")] = "other",
    scopes: Annotated[list[str] | None, typer.Option("--scope", "-s", help="Scope; repeatable.")] = None,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Save a resource; the secret is read from a file so it never appears in shell history.

    Example: knowhub knowledge resource save --id gw --title Gateway --secure-body-file pw.txt -s team:ops
    """
    payload: dict[str, Any] = {"id": resource_id, "title": title, "body": body, "content_type": content_type}
    if secure_body_file is not None:
        payload["secure_body"] = secure_body_file.read_text(encoding="utf-8")
    if scopes:
        payload["scopes"] = _split(scopes)
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        saved = hub.save_resource(who, payload)
    print_json(saved.to_dict())


@resource_app.command("get")
@handle_errors
def resource_get(
    resource_id: Annotated[str, typer.Argument(help="Resource id.")],
    secure: Annotated[bool, typer.Option("--secure", help="Also print the decrypted secret (owner/admin only).")] = False,
    data: DataOpt = None, config: ConfigOpt = None, principal: PrincipalOpt = None, member: MemberOpt = None,
    admin_of: AdminOpt = None,
) -> None:
    """Print a resource. Example: knowhub knowledge resource get gw --secure"""
    with _hub(config, data, principal, member, admin_of) as (hub, who):
        found = hub.get_resource(who, resource_id, include_secure=secure)
    print_json(found.to_dict())


__all__ = ["app"]

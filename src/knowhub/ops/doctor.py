"""``knowhub doctor``: check a deployment and say how to fix each problem.

Each check returns :class:`Finding` rows (``ok``, ``warn``, ``error`` or ``skip``) with a
fix for every problem; the faces only print them. The store checks are the very function
``knowhub admin check`` runs (:func:`knowhub.ops.maintenance.check_data_dir`); the LLM and
embedder checks make one real call each through the configured providers, so what they
report is what the engines will meet.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import statistics
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr

from knowhub.config import NON_SETTING_ENV, Settings, read_toml
from knowhub.errors import ConfigError, KnowhubError, LLMError
from knowhub.index.identity import REINDEX_COMMAND, EmbedderIdentity
from knowhub.storage.modes import DIR_MODE, FILE_MODE

#: ``scheme://user:password@`` in URLs such as ``knowledge.db_url``.
_URL_PASSWORD = re.compile(r"(://[^/:@\s]*:)[^/@\s]*@")

Status = Literal["ok", "warn", "error", "skip"]

#: Below this much free space in the data dir's file system writes are about to fail.
MIN_FREE_BYTES = 64 * 1024**2
#: Below this much free space a warning is given.
LOW_FREE_BYTES = 1024**3
#: Median fsync above this (milliseconds) makes every acknowledged write slow.
SLOW_FSYNC_MS = 50.0
_FSYNC_ROUNDS = 5
#: ``KNOWHUB_*`` variables that are read by a command, not by :class:`Settings`.
_LLM_PROBE_TIMEOUT_S = 20.0
_PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok"]},
        "number": {"type": "integer"},
    },
    "required": ["status", "number"],
    "additionalProperties": False,
}
_PROBE_MESSAGES = [
    {"role": "system", "content": "You are a health check. Answer with JSON only."},
    {"role": "user", "content": 'Reply with {"status": "ok", "number": 7}.'},
]


@dataclass
class Finding:
    """One line of the doctor's report."""

    check: str
    status: Status
    detail: str
    fix: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class DoctorReport:
    """Every finding; ``ok`` is False when any finding is an error."""

    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not any(f.status == "error" for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [asdict(f) for f in self.findings]}


# -- configuration ---------------------------------------------------------------------


def _unknown_keys(values: Mapping[str, Any], model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted keys of ``values`` that ``model`` has no field for (recursing into sections)."""
    unknown: list[str] = []
    for key, value in values.items():
        info = model.model_fields.get(key)
        dotted = f"{prefix}{key}"
        if info is None:
            unknown.append(dotted)
            continue
        annotation = info.annotation
        if isinstance(value, dict) and isinstance(annotation, type) and issubclass(annotation, BaseModel):
            unknown.extend(_unknown_keys(value, annotation, f"{dotted}."))
    return unknown


def _env_settings(env: Mapping[str, str]) -> dict[str, Any]:
    """``KNOWHUB_*`` variables as a nested dict (``KNOWHUB_LLM__MODEL`` → llm.model)."""
    nested: dict[str, Any] = {}
    for name, value in env.items():
        if not name.upper().startswith("KNOWHUB_") or name.upper() in NON_SETTING_ENV:
            continue
        parts = name[len("KNOWHUB_"):].lower().split("__")
        node = nested
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[parts[-1]] = value
    return nested


def _flatten(values: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in values.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _shown(value: Any) -> Any:
    """A value safe to print: secrets masked, keys of auth.keys counted, paths as text."""
    if isinstance(value, SecretStr):
        return "***" if value.get_secret_value() else ""
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return f"{len(value)} item(s)"
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str):
        return _URL_PASSWORD.sub(r"\1***@", value)
    return value


def _effective_values(settings: Settings, file_values: dict[str, Any], env_values: dict[str, Any],
                      flags: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each setting with its value and where it came from: flag, env, toml or default."""
    file_keys = dict(_flatten(file_values))
    env_keys = dict(_flatten(env_values))
    flag_keys = {k for k, v in flags.items() if v is not None}
    rows: list[dict[str, Any]] = []

    def walk(model: BaseModel, prefix: str) -> None:
        for name in type(model).model_fields:
            value = getattr(model, name)
            dotted = f"{prefix}{name}"
            if isinstance(value, BaseModel) and not isinstance(value, SecretStr):
                walk(value, f"{dotted}.")
                continue
            if dotted in flag_keys:
                source = "flag"
            elif dotted in env_keys:
                source = "env"
            elif dotted in file_keys:
                source = "toml"
            else:
                source = "default"
            rows.append({"key": dotted, "value": _shown(value), "source": source})

    walk(settings, "")
    return rows


def check_config(config_file: Path | None, flags: Mapping[str, Any],
                 env: Mapping[str, str]) -> tuple[Settings | None, list[Finding]]:
    """Load the settings as every command does; report unknown keys and value sources."""
    path = config_file or (Path(env["KNOWHUB_CONFIG"]) if env.get("KNOWHUB_CONFIG") else None)
    findings: list[Finding] = []
    try:
        file_values = read_toml(path) if path else {}
    except ConfigError as exc:
        return None, [Finding("config", "error", str(exc), "fix the file or point --config / "
                              "KNOWHUB_CONFIG at a valid TOML file")]
    env_values = _env_settings(env)
    unknown = [f"{k} (in {path.name})" for k in _unknown_keys(file_values, Settings)] if path else []
    unknown += [f"{k} (environment KNOWHUB_{k.upper().replace('.', '__')})"
                for k in _unknown_keys(env_values, Settings)]
    try:
        settings = Settings.load(config_file, **dict(flags))
    except ConfigError as exc:
        findings.append(Finding("config", "error", str(exc),
                                "correct or remove that setting (docs/configuration.md lists them all)",
                                {"unknown_keys": unknown}))
        return None, findings
    values = _effective_values(settings, file_values, env_values, flags)
    sources = {s: sum(1 for r in values if r["source"] == s) for s in ("flag", "env", "toml", "default")}
    summary = ", ".join(f"{n} from {s}" for s, n in sources.items() if n)
    where = f"file {path}" if path else "no config file"
    data = {"file": str(path) if path else None, "values": values, "unknown_keys": unknown}
    if unknown:
        findings.append(Finding(
            "config", "error", f"unknown setting(s): {', '.join(unknown)}",
            "remove or rename them (a typo is silently a default otherwise); "
            "docs/configuration.md lists every key", data))
    else:
        findings.append(Finding("config", "ok", f"{where}; {summary}", None, data))
    return settings, findings


# -- the data dir ----------------------------------------------------------------------


def _loose_modes(root: Path) -> tuple[list[str], list[str]]:
    """Files readable or writable by others than the owner, and such directories."""
    files: list[str] = []
    dirs: list[str] = []
    for current, subdirs, names in os.walk(root):
        here = Path(current)
        if stat.S_IMODE(here.stat().st_mode) & 0o077:
            dirs.append(str(here))
        for name in names:
            try:
                info = (here / name).lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
                files.append(str(here / name))
        subdirs[:] = [d for d in subdirs if not (here / d).is_symlink()]
    return files, dirs


def measure_fsync_ms(directory: Path, rounds: int = _FSYNC_ROUNDS) -> float:
    """Median milliseconds of write + fsync of a 4 KiB temp file in ``directory``."""
    samples: list[float] = []
    fd, name = tempfile.mkstemp(prefix=".doctor-", dir=directory)
    try:
        block = os.urandom(4096)
        for _ in range(rounds):
            started = time.perf_counter()
            os.pwrite(fd, block, 0)
            os.fsync(fd)
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        os.close(fd)
        os.unlink(name)
    return statistics.median(samples)


def check_data_dir(settings: Settings) -> list[Finding]:
    """Existence, private modes, free space and fsync latency of the data dir."""
    root = Path(settings.data_dir)
    if not root.exists():
        parent = next((p for p in root.absolute().parents if p.exists()), Path("/"))
        status: Status = "ok" if os.access(parent, os.W_OK) else "error"
        return [Finding(
            "data_dir", status, f"{root} does not exist yet; it is created (mode 0700) on first use",
            None if status == "ok" else f"make {parent} writable or choose another --data / data_dir")]
    if not root.is_dir():
        return [Finding("data_dir", "error", f"{root} is not a directory", "point data_dir at a directory")]
    findings: list[Finding] = []
    files, dirs = _loose_modes(root)
    if files or dirs:
        shown = ", ".join((files + dirs)[:5]) + (" ..." if len(files) + len(dirs) > 5 else "")
        findings.append(Finding(
            "data_dir.permissions", "error",
            f"{len(files)} file(s) and {len(dirs)} dir(s) are open to other users: {shown}",
            f"chmod -R go-rwx {root}   (data files should be {FILE_MODE:04o}, dirs {DIR_MODE:04o})",
            {"files": files, "dirs": dirs}))
    else:
        findings.append(Finding("data_dir.permissions", "ok",
                                f"files {FILE_MODE:04o}, dirs {DIR_MODE:04o} (owner only)"))
    usage = shutil.disk_usage(root)
    free_mib = usage.free // 1024**2
    if usage.free < MIN_FREE_BYTES:
        findings.append(Finding("data_dir.free_space", "error", f"only {free_mib} MiB free",
                                "free disk space or move data_dir to a larger volume",
                                {"free_bytes": usage.free}))
    elif usage.free < LOW_FREE_BYTES:
        findings.append(Finding("data_dir.free_space", "warn", f"{free_mib} MiB free",
                                "free disk space soon", {"free_bytes": usage.free}))
    else:
        findings.append(Finding("data_dir.free_space", "ok", f"{free_mib} MiB free",
                                data={"free_bytes": usage.free}))
    try:
        latency = measure_fsync_ms(root)
    except OSError as exc:
        findings.append(Finding("data_dir.fsync", "error", f"cannot write a temp file: {exc.strerror}",
                                f"make {root} writable by this user"))
        return findings
    if latency > SLOW_FSYNC_MS:
        findings.append(Finding(
            "data_dir.fsync", "warn", f"fsync takes {latency:.1f} ms (median)",
            "every acknowledged write waits for fsync: move data_dir to a local SSD "
            "(network file systems are slow)", {"fsync_ms": round(latency, 3)}))
    else:
        findings.append(Finding("data_dir.fsync", "ok", f"fsync {latency:.2f} ms (median)",
                                data={"fsync_ms": round(latency, 3)}))
    return findings


# -- engine stores ---------------------------------------------------------------------


def check_stores(settings: Settings) -> list[Finding]:
    """The same per-engine checks as ``knowhub admin check`` (no repairs)."""
    if not Path(settings.data_dir).is_dir():
        return [Finding("store", "skip", "no data dir yet: nothing stored")]
    from knowhub.ops.maintenance import check_data_dir as check_engines

    report = check_engines(settings, fix=False)
    findings: list[Finding] = []
    for name in ("tree", "knowledge", "context"):
        part = report.get(name)
        if not isinstance(part, dict):
            continue
        if part.get("ok"):
            findings.append(Finding(f"store.{name}", "ok", "consistent", data=part))
        elif part.get("open_error"):
            fix = ("knowhub admin reindex (the embedder changed)" if "admin reindex" in str(part["open_error"])
                   else "see docs/operations.md (recovery); restore a snapshot if the store is damaged")
            findings.append(Finding(f"store.{name}", "error", f"cannot open: {part['open_error']}", fix, part))
        else:
            findings.append(Finding(f"store.{name}", "error", "inconsistent with its indexes",
                                    f"knowhub admin check --fix --engine {name}", part))
    return findings


# -- providers -------------------------------------------------------------------------


def _matches_probe(answer: dict[str, Any]) -> bool:
    return answer.get("status") == "ok" and type(answer.get("number")) is int and set(answer) <= {"status", "number"}


def check_llm(settings: Settings) -> list[Finding]:
    """One real structured-output call; reports whether ``json_schema`` was honoured."""
    llm = settings.llm
    if llm.provider == "local":
        return [Finding("llm", "ok", "offline LocalAgent, nothing to reach")]
    from knowhub.providers.llm import OpenAICompatibleLLM

    probe = llm.model_copy(update={"max_retries": 0, "timeout_s": min(llm.timeout_s, _LLM_PROBE_TIMEOUT_S)})
    client = OpenAICompatibleLLM.from_settings(probe)
    where = f"{client.base_url or 'https://api.openai.com/v1'} model {client.model!r}"
    started = time.perf_counter()
    try:
        answer = client.chat(_PROBE_MESSAGES, _PROBE_SCHEMA)
    except LLMError as exc:
        return [Finding("llm", "error", f"{where}: {exc}",
                        "check llm.base_url (it ends in /v1), llm.model and llm.api_key, and that "
                        "the server is running: curl <base_url>/models")]
    finally:
        client.close()
    latency_ms = round((time.perf_counter() - started) * 1000, 1)
    mode = client.response_format_mode
    data = {"base_url": client.base_url, "model": client.model, "latency_ms": latency_ms,
            "response_format": mode, "answer_matches_schema": _matches_probe(answer)}
    if mode != "json_schema":
        return [Finding("llm", "warn", f"{where} answered, but rejects json_schema output (uses {mode})",
                        "use a server with json_schema output (vLLM, llama.cpp's llama-server, "
                        "Ollama >= 0.5, OpenAI); json_object+schema is enforced as a grammar by "
                        "llama-cpp-python but may be ignored elsewhere; answers are parsed "
                        "tolerantly meanwhile", data)]
    if not data["answer_matches_schema"]:
        return [Finding("llm", "warn", f"{where} accepts json_schema but its answer ignored it",
                        "the server may not enforce the schema (grammar); decisions then take "
                        "their fallbacks more often", data)]
    return [Finding("llm", "ok", f"{where}: structured output honoured ({latency_ms} ms)", None, data)]


def _recorded_identities(settings: Settings) -> dict[str, EmbedderIdentity]:
    """The embedder identity each engine recorded with its data (what its vectors are)."""
    from knowhub.context.indexing import recorded_identity
    from knowhub.knowledge.identity import read_identity

    found = {"knowledge": read_identity(settings.engine_dir("knowledge"), settings.knowledge.db_url),
             "context": recorded_identity(settings.engine_dir("context"))[0]}
    return {name: identity for name, identity in found.items() if identity is not None}


def check_embedder(settings: Settings) -> list[Finding]:
    """Embed one text; compare the dimension with the configured one, and the embedder with
    the one each engine recorded (engines refuse to open with another)."""
    emb = settings.embedding
    if emb.provider != "openai":
        from knowhub.providers.embedding import build_embedder

        local = build_embedder(emb)
        dim, name = local.dim, local.name
    else:
        from knowhub.providers.embedding import OpenAICompatibleEmbedder

        key = emb.api_key.get_secret_value() if emb.api_key is not None else None
        embedder = OpenAICompatibleEmbedder(base_url=emb.base_url, model=emb.model, api_key=key,
                                            dim=None, timeout_s=min(emb.timeout_s, _LLM_PROBE_TIMEOUT_S),
                                            max_retries=0)
        try:
            dim = int(embedder.embed_matrix(["knowhub doctor 健康检查"]).shape[1])
        except LLMError as exc:
            return [Finding("embedder", "error", f"{emb.base_url or 'OpenAI'} model {emb.model!r}: {exc}",
                            "check embedding.base_url, embedding.model and embedding.api_key")]
        finally:
            embedder.close()
        name = embedder.name
        if emb.dim is not None and dim != emb.dim:
            return [Finding("embedder", "error",
                            f"{name} returns {dim}-dimensional vectors, embedding.dim is {emb.dim}",
                            f"set embedding.dim = {dim}", {"dim": dim, "configured_dim": emb.dim})]
    current = EmbedderIdentity(name, dim)
    recorded = _recorded_identities(settings)
    data = {"embedder": name, "dim": dim, "recorded": {k: v.to_dict() for k, v in recorded.items()}}
    stale = [f"{engine} ({identity})" for engine, identity in recorded.items() if identity != current]
    if stale:
        return [Finding("embedder", "error",
                        f"the vectors of {', '.join(stale)} were made by another embedder than the "
                        f"configured {current}; those engines refuse to open",
                        f"{REINDEX_COMMAND} (re-embeds with the configured embedder), or set the "
                        "previous embedding settings back", data)]
    return [Finding("embedder", "ok", f"{current}" + (", matches the indexes" if recorded else ""),
                    None, data)]


def check_database(settings: Settings) -> list[Finding]:
    """Connect to ``knowledge.db_url`` (when set): server version and the pgvector extension."""
    url = settings.knowledge.db_url
    if not url:
        return [Finding("database", "ok", "SQLite in the data dir (knowledge.db_url not set)")]
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    try:
        parsed = make_url(url)
        safe = parsed.render_as_string(hide_password=True)
        engine = create_engine(parsed, connect_args={"connect_timeout": 5}
                               if parsed.get_backend_name() == "postgresql" else {})
    except (ArgumentError, ImportError, ValueError) as exc:
        return [Finding("database", "error", f"knowledge.db_url cannot be used: {type(exc).__name__}: {exc}",
                        "use postgresql+psycopg://user:pass@host/db (pip install 'knowhub[postgres]')")]
    try:
        with engine.connect() as conn:
            if parsed.get_backend_name() != "postgresql":
                conn.execute(text("SELECT 1"))
                return [Finding("database", "ok", f"{safe} reachable")]
            version = conn.execute(text("SHOW server_version")).scalar()
            vector = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc
        lines = str(cause).splitlines() or [""]
        return [Finding("database", "error", f"{safe}: {type(cause).__name__}: {lines[0]}",
                        "check that PostgreSQL runs and accepts this user, host and database")]
    finally:
        engine.dispose()
    data = {"server_version": version, "pgvector": vector}
    if vector is None:
        return [Finding("database", "warn", f"{safe}: PostgreSQL {version}, pgvector not installed",
                        "CREATE EXTENSION vector;  (needed for vector search in the database)", data)]
    return [Finding("database", "ok", f"{safe}: PostgreSQL {version}, pgvector {vector}", None, data)]


def check_server(settings: Settings) -> list[Finding]:
    """Bind address against API keys: no keys is only safe on loopback."""
    from knowhub.server.auth import check_bind_allowed, is_loopback_host

    host, port, keys = settings.server.host, settings.server.port, len(settings.auth.keys)
    data = {"host": host, "port": port, "keys": keys, "loopback": is_loopback_host(host)}
    try:
        check_bind_allowed(settings)
    except ConfigError as exc:
        return [Finding("server", "error", str(exc),
                        "add [[auth.keys]] entries (docs/configuration.md) or set server.host = "
                        "\"127.0.0.1\"", data)]
    mode = "production mode" if keys else "loopback mode, every request is " + settings.auth.default_principal
    return [Finding("server", "ok", f"binds {host}:{port}, {keys} API key(s), {mode}", None, data)]


def run_doctor(config_file: Path | None = None, flags: Mapping[str, Any] | None = None,
               env: Mapping[str, str] | None = None) -> DoctorReport:
    """Every check, in order; the later ones are skipped when the settings cannot load."""
    settings, findings = check_config(config_file, flags or {}, os.environ if env is None else env)
    if settings is None:
        findings.append(Finding("others", "skip", "skipped: the configuration does not load"))
        return DoctorReport(findings)
    for check in (check_data_dir, check_stores, check_llm, check_embedder, check_database, check_server):
        try:
            findings.extend(check(settings))
        except KnowhubError as exc:
            findings.append(Finding(check.__name__.removeprefix("check_"), "error", str(exc),
                                    "see docs/operations.md"))
    return DoctorReport(findings)


__all__ = ["DoctorReport", "Finding", "measure_fsync_ms", "run_doctor"]

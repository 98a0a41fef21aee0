"""Fixtures for the knowledge engine: principals, hubs on SQLite and on a real PostgreSQL.

PostgreSQL: ``KNOWHUB_TEST_PG_URL`` (a ``postgresql+psycopg://`` URL of a database the
tests may fill) is used when set. Otherwise the server of the ``pgserver`` wheel
(:mod:`tests.pgvector_server`, shared with the index tests), else the session fixture starts the local cluster
(``pg_ctlcluster 15 main start``), creates a throwaway role and database as the
``postgres`` OS user and drops the database at the end. When none of that works the
postgres tests skip with the reason.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from knowhub.knowledge import KnowledgeHub
from knowhub.scope import Principal
from tests.pgvector_server import pgvector_url

TEST_KEY = bytes(range(32))

# alice may publish into org:acme and public; bob into org:acme only.
ALICE = Principal.of("user:alice", ["team:red", "org:acme"], publish=["org:acme", "public"])
BOB = Principal.of("user:bob", ["team:blue", "org:acme"], publish=["org:acme"])
CAROL = Principal.of("user:carol", ["team:green"])
RED_ADMIN = Principal.of("user:root", ["team:red"], admin_of=["team:red"])


@pytest.fixture
def alice() -> Principal:
    return ALICE


@pytest.fixture
def bob() -> Principal:
    return BOB


@pytest.fixture
def carol() -> Principal:
    return CAROL


@pytest.fixture
def red_admin() -> Principal:
    return RED_ADMIN


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[KnowledgeHub]:
    with KnowledgeHub(tmp_path / "kh", secret_key=TEST_KEY) as instance:
        yield instance


def _cluster_port() -> str:
    """Port of the first local cluster (``pg_lsclusters``), else $PGPORT or 5432."""
    if shutil.which("pg_lsclusters"):
        out = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=False)
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[2].isdigit():
                return parts[2]
    return os.environ.get("PGPORT", "5432")


def _psql(sql: str, database: str = "postgres") -> subprocess.CompletedProcess[str]:
    command = ["psql", "-p", _cluster_port(), "-v", "ON_ERROR_STOP=1", "-d", database, "-c", sql]
    if os.geteuid() == 0:
        command = ["su", "postgres", "-c", " ".join(_quote(c) for c in command)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _start_cluster() -> str | None:
    """Start the local cluster if needed; returns a reason string when impossible."""
    if shutil.which("psql") is None:
        return "psql is not installed"
    probe = _psql("SELECT 1")
    if probe.returncode == 0:
        return None
    if shutil.which("pg_ctlcluster") is None:
        return f"no running PostgreSQL and no pg_ctlcluster ({probe.stderr.strip()[:200]})"
    clusters = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=False)
    lines = [line.split() for line in clusters.stdout.splitlines() if line.strip()]
    if not lines:
        return "no PostgreSQL cluster exists"
    version, name = lines[0][0], lines[0][1]
    started = subprocess.run(
        ["pg_ctlcluster", version, name, "start"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    probe = _psql("SELECT 1")
    if probe.returncode != 0:
        return f"could not start PostgreSQL: {(started.stderr or probe.stderr).strip()[:300]}"
    return None


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """URL of an empty PostgreSQL database for this test session (or skip)."""
    given = os.environ.get("KNOWHUB_TEST_PG_URL")
    if given:
        yield given
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed")
    bundled, _reason = pgvector_url()
    if bundled is not None:  # the pgserver wheel: PostgreSQL + pgvector, no system install
        yield bundled
        return
    try:
        reason = _start_cluster()
    except (OSError, subprocess.SubprocessError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
    if reason:
        pytest.skip(f"PostgreSQL unavailable: {reason}")
    password = secrets.token_hex(12)
    database = f"knowhub_test_{secrets.token_hex(4)}"
    try:
        role = _psql(
            "DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='knowhub_test') THEN "
            "CREATE ROLE knowhub_test LOGIN; END IF; END$$;"
            f"ALTER ROLE knowhub_test PASSWORD '{password}';"
        )
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    if role.returncode != 0:
        pytest.skip(f"PostgreSQL unavailable: cannot create role: {role.stderr.strip()[:300]}")
    created = _psql(f"CREATE DATABASE {database} OWNER knowhub_test")
    if created.returncode != 0:
        pytest.skip(
            f"PostgreSQL unavailable: cannot create database: {created.stderr.strip()[:300]}"
        )
    port = _cluster_port()
    yield f"postgresql+psycopg://knowhub_test:{password}@127.0.0.1:{port}/{database}"
    _psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def _reset_pg(url: str) -> None:
    """Drop every table so each test starts from an empty schema."""
    from sqlalchemy import MetaData, create_engine
    from sqlalchemy.exc import SAWarning

    engine = create_engine(url)
    try:
        meta = MetaData()
        with warnings.catch_warnings():  # pgvector's column type is unknown to SQLAlchemy
            warnings.simplefilter("ignore", SAWarning)
            meta.reflect(engine)
        meta.drop_all(engine)
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, object]]:
    """Constructor arguments of a hub on each store backend (fresh, empty)."""
    if request.param == "sqlite":
        yield {"data_dir": tmp_path / "kh", "db_url": None}
        return
    url = request.getfixturevalue("pg_url")
    _reset_pg(url)
    yield {"data_dir": tmp_path / "kh", "db_url": url}
    _reset_pg(url)


@pytest.fixture
def any_hub(backend: dict[str, object]) -> Iterator[KnowledgeHub]:
    """A hub on SQLite and (marked postgres) on PostgreSQL."""
    with KnowledgeHub(
        backend["data_dir"],  # type: ignore[arg-type]
        db_url=backend["db_url"],  # type: ignore[arg-type]
        secret_key=TEST_KEY,
    ) as instance:
        yield instance


def _body(task: str, content: str, **fields: object) -> dict[str, object]:
    return {"task": task, "content": content, "types": fields.pop("types", ["strategy"]), **fields}


@pytest.fixture
def mk() -> Callable[..., dict[str, object]]:
    """Builds a save body: ``mk(task, content, types=[...], scopes=[...], score=4)``."""
    return _body

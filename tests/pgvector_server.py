"""A PostgreSQL server with pgvector for tests: ``KNOWHUB_TEST_PGVECTOR_URL`` when set, else
a private server started from the ``pgserver`` wheel (PostgreSQL + pgvector in a PyPI
package, so no system install and no download at run time).

Debian's PostgreSQL has no pgvector package, so the PostgreSQL index backend cannot use the
cluster the store tests use. When neither works the tests skip with one clear line.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

_STATE: dict[str, Any] = {}


def pgvector_url() -> tuple[str | None, str]:
    """``(SQLAlchemy URL of a fresh database, "")`` or ``(None, reason to skip)``."""
    if "result" in _STATE:
        return _STATE["result"]
    _STATE["result"] = _start()
    return _STATE["result"]


def _start() -> tuple[str | None, str]:
    given = os.environ.get("KNOWHUB_TEST_PGVECTOR_URL")
    if given:
        return given, ""
    # platformdirs (used by pgserver) warns on every call without a runtime dir
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="knowhub-xdg-"))
    try:
        import pgserver  # type: ignore[import-untyped]
        from sqlalchemy import create_engine, text
    except ImportError as exc:
        return None, f"PostgreSQL+pgvector unavailable: {exc} (pip install -e '.[dev]')"
    root = Path(tempfile.mkdtemp(prefix="knowhub-pgvector-"))
    try:
        server = pgserver.get_server(root / "pgdata", cleanup_mode="stop")
        base = server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
        database = f"knowhub_test_{secrets.token_hex(4)}"
        admin = create_engine(base, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {database}"))
        admin.dispose()
    except Exception as exc:  # any failure to start is a reason to skip, said once
        return None, f"PostgreSQL+pgvector unavailable: could not start pgserver: {type(exc).__name__}: {exc}"[:300]
    atexit.register(_stop_and_remove, server, root)
    return base.replace("/postgres?", f"/{database}?", 1), ""


def _stop_and_remove(server: Any, root: Path) -> None:
    """Stop the server and delete its data folder: every test run used to leave ~100 MB
    behind in the temp dir, and a full disk fails the next run at every ``tmp_path``."""
    try:
        server.cleanup()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(url: str, prefix: str = "knowhub_test") -> str:
    """A new, empty database on the server of ``url``; returns its URL (tests that need
    their own tables: two servers, migrations, containers)."""
    from sqlalchemy import create_engine, make_url, text

    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return make_url(url).set(database=name).render_as_string(hide_password=False)

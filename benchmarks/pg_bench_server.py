"""Start (or reuse) a private PostgreSQL + pgvector server from the ``pgserver`` wheel in a
data directory that outlives the run, with the settings of the 1M measurements
(docs/benchmarks.md, "PostgreSQL at 1M documents"), and print its SQLAlchemy URL; with
``--stop`` stop it (the data stays).

    python benchmarks/pg_bench_server.py --dir /tmp/pg1m-data --database pg1m
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

SETTINGS = {"shared_buffers": "2GB", "max_wal_size": "8GB", "checkpoint_timeout": "30min",
            "max_parallel_maintenance_workers": "2"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True, help="data directory (created on first use)")
    parser.add_argument("--database", default="bench", help="database to create if missing")
    parser.add_argument("--stop", action="store_true", help="stop the server (the data stays)")
    args = parser.parse_args(argv)
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="knowhub-xdg-"))
    import pgserver  # type: ignore[import-untyped]
    from pgserver._commands import pg_ctl  # type: ignore[import-untyped]
    from sqlalchemy import create_engine, text

    server = pgserver.get_server(args.dir, cleanup_mode=None)
    if args.stop:
        pg_ctl(["-w", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=120)
        return 0
    shown = {k: server.psql(f"SHOW {k}").split("\n")[2].strip() for k in SETTINGS}
    if shown != SETTINGS:  # ALTER SYSTEM, then a restart for shared_buffers
        for key, value in SETTINGS.items():
            server.psql(f"ALTER SYSTEM SET {key} = '{value}'")
        pg_ctl(["-w", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=120)
        server = pgserver.get_server(args.dir, cleanup_mode=None)
    base = server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if not conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": args.database}).first():
            conn.execute(text(f'CREATE DATABASE "{args.database}"'))
    admin.dispose()
    print(base.replace("/postgres?", f"/{args.database}?", 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

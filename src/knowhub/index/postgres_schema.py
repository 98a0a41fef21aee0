"""The base tables of a :class:`~knowhub.index.postgres.PostgresIndex` (documents, vectors,
postings, per-term and per-partition statistics), as SQL; the impact and keyed additions
live in :mod:`knowhub.index.postgres_impact` and :mod:`knowhub.index.postgres_keyed`."""

from __future__ import annotations

__all__ = ["base_tables_sql"]


def _main(table: str, *columns: str) -> str:
    """``ALTER TABLE`` keeping ``columns`` in the row (storage MAIN)."""
    return f"ALTER TABLE {table} " + ", ".join(f"ALTER COLUMN {c} SET STORAGE MAIN" for c in columns)


def base_tables_sql(t: str, dim: int) -> list[str]:
    """``CREATE`` statements of index ``t``'s base tables (``IF NOT EXISTS``) and the
    ``ALTER TABLE`` storage settings (run only at creation: they lock the table)."""
    # MAIN storage keeps the columns a search reads inside the row (compressed at most):
    # a vector or filter moved out of line (TOAST) costs a lookup per row scanned
    return [
        f"CREATE TABLE IF NOT EXISTS {t}_meta (key text PRIMARY KEY, value text NOT NULL)",
        f"""CREATE TABLE IF NOT EXISTS {t}_docs (
            id text PRIMARY KEY,
            tokens text NOT NULL,
            doc_len integer NOT NULL,
            part text NOT NULL,
            filters jsonb NOT NULL,
            fterms text[] NOT NULL,
            numbers jsonb NOT NULL,
            payload jsonb NOT NULL)""",
        _main(f"{t}_docs", "id", "part", "fterms", "numbers"),
        f"CREATE INDEX IF NOT EXISTS {t}_docs_fterms ON {t}_docs USING gin (fterms)",
        f"""CREATE TABLE IF NOT EXISTS {t}_vecs (
            id text PRIMARY KEY,
            part text NOT NULL,
            vec vector({dim}) NOT NULL,
            fterms text[] NOT NULL,
            numbers jsonb NOT NULL)""",
        _main(f"{t}_vecs", "id", "part", "vec", "fterms", "numbers"),
        f"CREATE INDEX IF NOT EXISTS {t}_vecs_fterms ON {t}_vecs USING gin (fterms)",
        f"CREATE INDEX IF NOT EXISTS {t}_vecs_part ON {t}_vecs (part)",
        f"""CREATE TABLE IF NOT EXISTS {t}_postings (
            term text NOT NULL,
            part text NOT NULL,
            id text NOT NULL,
            tf integer NOT NULL,
            impact smallint,
            fterms text[],
            PRIMARY KEY (term, part, id))""",
        f"CREATE INDEX IF NOT EXISTS {t}_postings_id ON {t}_postings (id) INCLUDE (part, term, tf)",
        f"""CREATE TABLE IF NOT EXISTS {t}_terms (
            term text NOT NULL, part text NOT NULL, df bigint NOT NULL,
            tf_max integer NOT NULL, len_min integer NOT NULL, PRIMARY KEY (term, part))""",
        f"""CREATE TABLE IF NOT EXISTS {t}_stats (
            part text PRIMARY KEY, n_all bigint NOT NULL, n bigint NOT NULL, total bigint NOT NULL)""",
    ]

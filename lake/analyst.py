"""SQL typed by an analyst (`flywheel lake sql`): it may read the lake's views and nothing else.

The catalog is opened read-only; only a single SELECT-type statement runs (SELECT, WITH, FROM, DESCRIBE,
SHOW, SUMMARIZE), because COPY, EXPORT, ATTACH, SET and PRAGMA could write into the lake or read other
files; and file access is switched off (`enable_external_access = false`, locked) except for the lake's
own table folder, which the views read.
"""

from __future__ import annotations

from typing import Any

import duckdb

from lake.store import Lake


class AnalystSQLRefused(ValueError):
    """The SQL is not one read statement: the message says what ran nothing, and why."""


def analyst_connection(lake: Lake) -> duckdb.DuckDBPyConnection:
    """A read-only connection on the catalog that can reach no file outside the lake's tables."""
    if lake.remote:  # object storage: the views read this process's Arrow datasets, not files
        con = lake.connect()
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        return con
    con = duckdb.connect(str(lake.catalog_path), read_only=True)
    tables = lake.tables_dir.as_posix().replace("'", "''") + "/"
    con.execute(f"SET allowed_directories = ['{tables}']")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def check_read_only(sql: str) -> str:
    """The one read statement in `sql`, or AnalystSQLRefused naming what was refused."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise AnalystSQLRefused(f"cannot parse the SQL: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise AnalystSQLRefused(f"give one statement, not {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise AnalystSQLRefused(f"{kind.name} statements do not run here: the lake is read-only to analysts; "
                                "use SELECT, DESCRIBE, SHOW or SUMMARIZE")
    return statements[0].query


def run_analyst_sql(lake: Lake, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of one read statement over the catalog's views."""
    query = check_read_only(sql)
    con = analyst_connection(lake)
    try:
        cur = con.execute(query)
        return [d[0] for d in cur.description or []], cur.fetchall()
    finally:
        con.close()

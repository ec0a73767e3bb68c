"""The lake's data dictionary, from one source (lake.schemas.DESCRIPTIONS): `COMMENT ON` statements for the
catalog's views and columns, and docs/lake.md.

    python -m lake.dictionary > docs/lake.md      # regenerate (a test fails when the file is stale)
"""

from __future__ import annotations

import sys

from lake.schemas import COMMON_COLUMNS, DENSE_VIEWS, DESCRIPTIONS, LATEST_BY_KEY, TABLES, duckdb_type


def views() -> list[tuple[str, str]]:
    """(view, table) for every view the catalog holds: each table's view, plus `<table>_history` for event tables."""
    out = []
    for table in TABLES:
        out.append((table, table))
        if table in LATEST_BY_KEY:
            out.append((f"{table}_history", table))
        if table in DENSE_VIEWS:
            out.append((DENSE_VIEWS[table], table))
    return out


def describe_column(table: str, column: str) -> str:
    own = DESCRIPTIONS.get(table, ("", {}))[1]
    text = own.get(column) or COMMON_COLUMNS.get(column)
    if not text:
        raise KeyError(f"lake table {table!r} column {column!r} has no description: add it to "
                       "lake.schemas.DESCRIPTIONS (or COMMON_COLUMNS), then run `python -m lake.dictionary > docs/lake.md`")
    return text


def describe_view(view: str, table: str) -> str:
    text = DESCRIPTIONS[table][0]
    if view != table and table in DENSE_VIEWS:
        return f"The rows of `{table}` that were written: mined steps whose values differ from a clean step's."
    if view != table:
        key, order = LATEST_BY_KEY[table]
        return f"Every row of `{table}`, in the order written (`{table}` keeps the latest per {key} by {order})."
    return text


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def comment_statements() -> list[str]:
    """`COMMENT ON VIEW` / `COMMENT ON COLUMN` for every view and column of the catalog."""
    stmts = []
    for view, table in views():
        stmts.append(f"COMMENT ON VIEW {view} IS {_quote(describe_view(view, table))}")
        stmts += [f"COMMENT ON COLUMN {view}.{f.name} IS {_quote(describe_column(table, f.name))}" for f in TABLES[table]]
    return stmts


def apply_comments(con) -> None:
    """Comment every view and column on a DuckDB connection that holds the catalog's views."""
    for stmt in comment_statements():
        con.execute(stmt)


def render_markdown() -> str:
    lines = [
        "# The lake: a data dictionary",
        "",
        "Generated from `lake/schemas.py` by `python -m lake.dictionary > docs/lake.md`; the same text is in the",
        "catalog as comments (`SELECT view_name, comment FROM duckdb_views()`,",
        "`SELECT table_name, column_name, comment FROM duckdb_columns()`).",
        "",
        "Open the catalog read-only while flows run (it is rebuilt by a rename, so your session keeps working):",
        "",
        "```bash",
        ".venv/bin/duckdb -readonly lake/catalog.duckdb      # the DuckDB CLI that ./bootstrap installs",
        "flywheel lake sql \"SELECT * FROM runs ORDER BY started_at DESC LIMIT 5\"   # or through flywheel",
        "```",
        "",
        "Columns typed `JSON` hold JSON text: read a field with `col->>'key'` (text) or `col->'key'` (JSON), e.g.",
        "`provenance_json->>'parent_task_id'`; `json_array_length(actions_json)` counts a list. Put `->>` in",
        "parentheses before `IS NULL`, `=` or `OR` (`(provenance_json->>'seed_id') IS NOT NULL`): the CLI's",
        "DuckDB 1.5 binds `->>` looser than they do. Text that is not valid JSON reads as NULL. Times are UTC",
        "(`TIMESTAMPTZ`). Screenshots and UI trees are files under `lake/blobs/sha256/<ab>/<cd>/<sha>`, named by",
        "the `*_sha` columns. Example questions answered in SQL: `docs/analyst_questions.sql`.",
        "",
        "## Views",
        "",
        "| view | what it holds |",
        "|---|---|",
    ]
    lines += [f"| [`{view}`](#{table}) | {describe_view(view, table)} |" for view, table in views()]
    for table in TABLES:
        lines += ["", f"## {table}", "", DESCRIPTIONS[table][0], ""]
        if table in LATEST_BY_KEY:
            key, order = LATEST_BY_KEY[table]
            lines += [f"Latest row per {key} (by {order}); `{table}_history` has the same columns and every row.", ""]
        if table in DENSE_VIEWS:
            lines += [f"Written sparse: `{DENSE_VIEWS[table]}` has the same columns and the rows written; `{table}` adds "
                      "a clean row (ct 1, qt 1, st 0, lt 0) for every other step of a trajectory whose `mined` row "
                      "has weights_json.", ""]
        lines += ["| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{f.name}` | {duckdb_type(table, f.name)} | {describe_column(table, f.name)} |" for f in TABLES[table]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_markdown())

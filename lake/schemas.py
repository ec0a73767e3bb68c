"""Every lake table's schema, in one place. Other packages never define columns."""

from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")

TABLES: dict[str, pa.Schema] = {
    # Task-verifier pairs. Append-only: a status change is a new row; the `tasks` view keeps the latest.
    "tasks": pa.schema(
        [
            ("task_id", pa.string()),
            ("version", pa.int32()),
            ("sandbox", pa.string()),
            ("source_commit", pa.string()),
            ("family", pa.string()),
            ("app_area", pa.string()),
            ("difficulty", pa.string()),
            ("instruction", pa.string()),
            ("status", pa.string()),  # candidate | verified | rejected | retired
            ("reason", pa.string()),  # reason code when rejected
            ("reason_detail", pa.string()),
            ("seed", pa.int64()),
            ("params_json", pa.string()),
            ("injection_json", pa.string()),  # [{skill_id, args}]
            ("verifier_json", pa.string()),  # {template, params}
            ("reference_json", pa.string()),  # [action, ...]
            ("provenance_json", pa.string()),  # agent, model, prompt hash, synthesiser version
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    "skills": pa.schema(
        [
            ("skill_id", pa.string()),
            ("sandbox", pa.string()),
            ("source_commit", pa.string()),
            ("name", pa.string()),
            ("kind", pa.string()),
            ("description", pa.string()),
            ("spec_json", pa.string()),
            ("agent", pa.string()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # One row per check the validation gate ran on a candidate.
    "validation_runs": pa.schema(
        [
            ("run_id", pa.string()),
            ("task_id", pa.string()),
            ("sandbox", pa.string()),
            ("stage", pa.string()),  # initial | reference | repeat | truncated | gate
            ("passed", pa.bool_()),
            ("expected", pa.bool_()),
            ("verdict_reason", pa.string()),
            ("evidence_json", pa.string()),
            ("error", pa.string()),
            ("duration_s", pa.float64()),
            ("recorded_at", TS),
        ]
    ),
    "quarantine": pa.schema(
        [
            ("source_table", pa.string()),
            ("source", pa.string()),
            ("record_json", pa.string()),
            ("reason", pa.string()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    "runs": pa.schema(
        [
            ("run_id", pa.string()),
            ("flow", pa.string()),
            ("parameters_json", pa.string()),
            ("summary_json", pa.string()),
            ("started_at", TS),
            ("finished_at", TS),
        ]
    ),
}

# Views that keep only the latest row per key (state that changes is an append-only event table).
LATEST_BY_KEY: dict[str, tuple[str, str]] = {"tasks": ("task_id", "recorded_at")}

DUCKDB_TYPES = {
    pa.string(): "VARCHAR",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.bool_(): "BOOLEAN",
    pa.float64(): "DOUBLE",
    TS: "TIMESTAMPTZ",
}


def schema_for(table: str) -> pa.Schema:
    try:
        return TABLES[table]
    except KeyError:
        raise KeyError(f"unknown lake table {table!r}; known tables: {', '.join(sorted(TABLES))}") from None

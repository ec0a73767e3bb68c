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
    # One row per episode of a policy on a task, whatever produced it.
    "trajectories": pa.schema(
        [
            ("trajectory_id", pa.string()),
            ("task_id", pa.string()),
            ("task_version", pa.int32()),
            ("sandbox", pa.string()),
            ("source_commit", pa.string()),
            ("policy", pa.string()),
            ("model", pa.string()),
            ("episode", pa.int32()),
            ("num_steps", pa.int32()),
            ("ended", pa.string()),  # terminated | max_steps | env_error
            ("end_detail", pa.string()),
            ("instruction", pa.string()),  # the request the episode worked on, as the policy was given it
            ("final_answer", pa.string()),
            ("evidence_json", pa.string()),  # the task verifier's probes after injection and at the end
            ("injected_faults_json", pa.string()),  # what a simulator policy did wrong on purpose
            ("started_at", TS),
            ("finished_at", TS),
            ("duration_s", pa.float64()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # One row per model turn (a turn may carry a batch of actions).
    "steps": pa.schema(
        [
            ("trajectory_id", pa.string()),
            ("step_index", pa.int32()),
            ("screenshot_sha", pa.string()),  # blobs/sha256/..
            ("screen_width", pa.int32()),
            ("screen_height", pa.int32()),
            ("ui_tree_sha", pa.string()),
            ("url", pa.string()),
            ("raw_output", pa.string()),
            ("actions_json", pa.string()),
            ("format_error", pa.string()),
            ("ok", pa.bool_()),
            ("error", pa.string()),
            ("points_json", pa.string()),  # where each action landed on the 0..999 grid
            ("outputs_json", pa.string()),  # per action, what it returned: a shell command's exit_code, stdout, stderr
            ("sensitive", pa.string()),
            ("started_at", TS),
            ("finished_at", TS),
            ("run_id", pa.string()),
        ]
    ),
    "verdicts": pa.schema(
        [
            ("trajectory_id", pa.string()),
            ("task_id", pa.string()),
            ("sandbox", pa.string()),
            ("policy", pa.string()),
            ("verdict", pa.string()),  # pass | failed | env_error
            ("reason", pa.string()),
            ("votes_json", pa.string()),  # every voter's vote and reason
            ("agreement", pa.float64()),
            ("judge_version", pa.string()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # Curriculum pool membership per (policy, task); append-only, the `pools` view keeps the latest.
    "pools": pa.schema(
        [
            ("policy", pa.string()),
            ("task_id", pa.string()),
            ("sandbox", pa.string()),
            ("family", pa.string()),
            ("pool", pa.string()),  # active | monitoring | mastered
            ("success_rate", pa.float64()),
            ("episodes", pa.int32()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # Mined failures: one row per finding (a step range of one trajectory).
    "failures": pa.schema(
        [
            ("failure_id", pa.string()),
            ("trajectory_id", pa.string()),
            ("task_id", pa.string()),
            ("sandbox", pa.string()),
            ("policy", pa.string()),
            ("first_step", pa.int32()),
            ("last_step", pa.int32()),
            ("kind", pa.string()),  # loop | bad_args | sensitive | side_effect | premature
            ("reason", pa.string()),  # reason code, e.g. exact_repeat, coords_out_of_range, unconfirmed_sensitive
            ("severity", pa.float64()),  # 0..1
            ("evidence_json", pa.string()),
            ("evidence_level", pa.string()),  # what it rests on: actions | url | ui_tree | screenshot | errors | manifest
            ("confidence", pa.float64()),  # 0..1
            ("detector_version", pa.string()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # Per-step signals for Action-RL: action-type correctness Ct, argument quality Qt, sensitive-action
    # penalty St, repetition penalty Lt, and the combined reward with the weights that produced it.
    "step_rewards": pa.schema(
        [
            ("trajectory_id", pa.string()),
            ("step_index", pa.int32()),
            ("ct", pa.float64()),
            ("qt", pa.float64()),
            ("st", pa.float64()),
            ("lt", pa.float64()),
            ("reward", pa.float64()),
            ("weights_json", pa.string()),
            ("detector_version", pa.string()),
            ("run_id", pa.string()),
        ]
    ),
    # Which trajectories each detector version has mined, so re-runs process only new ones.
    "mined": pa.schema(
        [
            ("trajectory_id", pa.string()),
            ("detector_version", pa.string()),
            ("undecidable_json", pa.string()),  # checks that could not run (no screenshot, no UI tree), counted
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # Targeted seeds for synthesis: a weakness seen in a task, with the step context.
    "failure_seeds": pa.schema(
        [
            ("seed_id", pa.string()),
            ("task_id", pa.string()),
            ("sandbox", pa.string()),
            ("kind", pa.string()),
            ("reason", pa.string()),
            ("context_json", pa.string()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # One row per LLM call, cache hits included (cost 0), with the raw request and response.
    "llm_calls": pa.schema(
        [
            ("call_id", pa.string()),
            ("request_hash", pa.string()),
            ("purpose", pa.string()),  # policy | judge | agent | ...
            ("model", pa.string()),
            ("api_base", pa.string()),
            ("prompt_tokens", pa.int64()),
            ("completion_tokens", pa.int64()),
            ("cost_usd", pa.float64()),
            ("latency_s", pa.float64()),
            ("cache_hit", pa.bool_()),
            ("error", pa.string()),
            ("request_json", pa.string()),
            ("response_json", pa.string()),
            ("run_id", pa.string()),
            ("recorded_at", TS),
        ]
    ),
    # The LLM coding agent's conversations: one row per message (system, user, assistant, tool) or event
    # (an LLM error, a spent budget), in order per session (run, sandbox); llm_call_id joins llm_calls.
    "agent_transcripts": pa.schema(
        [
            ("run_id", pa.string()),
            ("session_id", pa.string()),
            ("sandbox", pa.string()),
            ("source_commit", pa.string()),
            ("agent", pa.string()),
            ("model", pa.string()),
            ("turn", pa.int32()),
            ("role", pa.string()),  # system | user | assistant | tool | event
            ("content", pa.string()),
            ("tool_calls_json", pa.string()),  # the assistant's tool calls, raw (arguments as the model sent them)
            ("tool_name", pa.string()),
            ("tool_call_id", pa.string()),
            ("error", pa.string()),  # a tool error (bad JSON, unknown tool, bad arguments), llm_error, budget_exhausted
            ("llm_call_id", pa.string()),
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
    # Human spot-review decisions (append-only; the `reviews` view keeps each reviewer's latest per item).
    # Written by the review queue; read by export curation (rejected items are never exported), the
    # judge-agreement figure (AutoJudge vs humans) and verifier retirement.
    "reviews": pa.schema(
        [
            ("review_id", pa.string()),  # unique per decision
            ("item_kind", pa.string()),  # task | trajectory
            ("item_id", pa.string()),  # task_id or trajectory_id
            ("sandbox", pa.string()),
            ("family", pa.string()),
            ("reviewer", pa.string()),
            ("decision", pa.string()),  # accept | reject | relabel | flag_verifier
            ("reason", pa.string()),  # why, for reject / flag_verifier
            ("label", pa.string()),  # the corrected verdict for relabel: pass | failed | env_error
            ("judge_label", pa.string()),  # what AutoJudge said, for trajectories
            ("sample_id", pa.string()),  # the sample the item was drawn in
            ("decided_at", TS),
        ]
    ),
    # What each sandbox offers (areas: screens, form actions, data entities) and how well it is covered;
    # one row per (run, sandbox, area), written by `explore` before and after it runs.
    "coverage": pa.schema(
        [
            ("run_id", pa.string()),
            ("sandbox", pa.string()),
            ("area", pa.string()),  # e.g. "/messages/<>", "POST /messages/<>/star", "table messages"
            ("area_kind", pa.string()),  # screen | action | entity
            ("exists_from", pa.string()),  # source | exploration
            ("phase", pa.string()),  # before | after (the explore run)
            ("verified_tasks", pa.int64()),
            ("trajectories", pa.int64()),
            ("failures", pa.int64()),
            ("recorded_at", TS),
        ]
    ),
    # The explorer's transition graph: abstract states (URL pattern + structural hash of the UI tree),
    # the action taken, and what it changed (DB rows for sqlite state, page state otherwise).
    "transitions": pa.schema(
        [
            ("run_id", pa.string()),
            ("sandbox", pa.string()),
            ("from_state", pa.string()),
            ("from_url", pa.string()),
            ("path_json", pa.string()),  # the actions that lead from a reset sandbox to from_state
            ("action_json", pa.string()),  # the actions of this transition (fills, then the click)
            ("to_state", pa.string()),  # null when the action was not performed
            ("to_url", pa.string()),
            ("diff_json", pa.string()),
            ("changed_state", pa.bool_()),
            ("area", pa.string()),
            ("sensitive", pa.string()),  # the manifest's sensitive kind of the control, if any
            ("outcome", pa.string()),  # performed | skipped_sensitive | error
            ("revisit", pa.bool_()),  # to_state had been discovered before
            ("recorded_at", TS),
        ]
    ),
    # One row per export build that reached the quality gate: published versions (gate_success true,
    # `version` set) and builds the gate refused (gate_success false, `version` null, nothing published).
    "exports": pa.schema(
        [
            ("name", pa.string()),
            ("version", pa.string()),  # v0001, v0002, ... under exports/<name>/
            ("format", pa.string()),  # messages | action-rl
            ("config_hash", pa.string()),
            ("config_json", pa.string()),
            ("rows", pa.int64()),
            ("steps", pa.int64()),
            ("trajectories", pa.int64()),
            ("files_json", pa.string()),  # [{path, rows, bytes, sha256}]
            ("manifest_hash", pa.string()),  # sha256 of manifest.json
            ("gate_result_path", pa.string()),
            ("gate_success", pa.bool_()),
            ("lineage_json", pa.string()),
            ("path", pa.string()),  # the published folder
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
LATEST_BY_KEY: dict[str, tuple[str, str]] = {
    "tasks": ("task_id", "recorded_at"),
    "pools": ("policy, task_id", "recorded_at"),
    "reviews": ("item_kind, item_id, reviewer", "decided_at"),
}

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

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
            ("evidence_level", pa.string()),  # what it rests on: actions | reasoning | url | ui_tree | screenshot | errors | manifest
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
            ("weights_json", pa.string()),  # the reward weights of its steps' step_rewards (see DENSE_VIEWS)
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
    # One row when a flow starts (status running) and one when it ends (completed | failed); the `runs`
    # view keeps the latest per invocation. Written by lake.runs.recorded_run around every flow.
    "runs": pa.schema(
        [
            ("invocation_id", pa.string()),
            ("parent_invocation_id", pa.string()),
            ("run_id", pa.string()),
            ("flow", pa.string()),
            ("status", pa.string()),  # running | completed | failed
            ("parameters_json", pa.string()),
            ("counts_json", pa.string()),
            ("error", pa.string()),
            ("started_at", TS),
            ("finished_at", TS),
            ("recorded_at", TS),
            ("owner", pa.string()),  # host:pid:start-ticks of the process running it (added later: null before)
        ]
    ),
}

# Views that keep only the latest row per key (state that changes is an append-only event table).
LATEST_BY_KEY: dict[str, tuple[str, str]] = {
    "tasks": ("task_id", "recorded_at"),
    "pools": ("policy, task_id", "recorded_at"),
    "reviews": ("item_kind, item_id, reviewer", "decided_at"),
    "runs": ("invocation_id", "recorded_at"),
}

# Tables stored sparse, view -> the view of the rows written. mine-failures writes a step_rewards row only for
# a step whose reward differs from a clean step's (ct 1, qt 1, st 0, lt 0): most steps have no finding, and one
# row per step was a third of mining's cost. The `step_rewards` view is every mined step, as before: the rows
# written, plus a clean row for each other step of a trajectory whose `mined` row carries weights_json (the
# weights its rewards were combined with; rows of miners that wrote every step carry none, so old lakes read
# as they were written). Its reward is the clean step's under those weights, computed as rewards.py does.
DENSE_VIEWS: dict[str, str] = {"step_rewards": "step_rewards_sparse"}
DENSE_VIEW_NEEDS: dict[str, tuple[str, ...]] = {"step_rewards": ("steps", "mined")}
def step_rewards_sql(steps: str = "steps", trajectories: str | None = None) -> str:
    """The `step_rewards` view's query: the rows written plus a clean row for every other step of a trajectory
    mined with weights_json. `steps` names where the steps come from (the `steps` view, or a `read_parquet`
    of some of its files); `trajectories`, a subquery of trajectory ids, keeps those only (a reader of a few
    trajectories, such as an export batch, filters inside the query: DuckDB does not push a filter on the
    view through its union and join, and would join every step)."""
    only = f"trajectory_id IN {trajectories}" if trajectories else "true"
    return f"""
        SELECT * FROM step_rewards_sparse WHERE {only}
        UNION ALL
        SELECT s.trajectory_id, s.step_index, 1.0::DOUBLE AS ct, 1.0::DOUBLE AS qt, 0.0::DOUBLE AS st,
               0.0::DOUBLE AS lt, m.reward, m.weights_json, m.detector_version, m.run_id
        FROM (SELECT trajectory_id, step_index FROM {steps} WHERE {only}) s
        JOIN (SELECT trajectory_id, weights_json, detector_version, run_id,
                     (weights_json->>'ct')::DOUBLE * 1.0 + (weights_json->>'qt')::DOUBLE * 1.0
                       + (weights_json->>'st')::DOUBLE * 0.0 + (weights_json->>'lt')::DOUBLE * 0.0 AS reward
              FROM mined WHERE weights_json IS NOT NULL AND {only}) m ON m.trajectory_id = s.trajectory_id
        WHERE NOT EXISTS (SELECT 1 FROM step_rewards_sparse r WHERE {only} AND r.trajectory_id = s.trajectory_id
                          AND r.step_index = s.step_index AND r.detector_version = m.detector_version)"""


DENSE_VIEW_SQL: dict[str, str] = {"step_rewards": step_rewards_sql()}

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


# JSON keys renamed since they were first written: (table, column) -> {old key: new key}. The catalog's views
# read old rows under the new names, so SQL and Python readers use one spelling on old lakes too.
RENAMED_JSON_KEYS: dict[tuple[str, str], dict[str, str]] = {
    ("tasks", "provenance_json"): {"parent_task": "parent_task_id", "partner_task": "partner_task_id"},
}


def json_columns(table: str) -> list[str]:
    """Columns that hold JSON text: the catalog's views type them as DuckDB `JSON`."""
    return [f.name for f in schema_for(table) if f.name.endswith("_json")]


def duckdb_type(table: str, column: str) -> str:
    """The column's type in the catalog's views."""
    return "JSON" if column.endswith("_json") else DUCKDB_TYPES[schema_for(table).field(column).type]


# ---- the data dictionary ---------------------------------------------------------------------------------
# What every table and column means, for analysts: the catalog carries these as `COMMENT ON` (see
# lake.dictionary) and docs/lake.md is generated from them. A column shared by many tables is described once
# in COMMON_COLUMNS; a table's own entry wins.
COMMON_COLUMNS: dict[str, str] = {
    "run_id": "The flow run that wrote the row (e.g. synth-…, rollout-…, judge-…); joins `runs.run_id`.",
    "recorded_at": "When the row was written (UTC).",
    "sandbox": "The sandbox app's name (sandboxes/<name>/sandbox.toml).",
    "source_commit": "The sandbox source the row was made from: the last git commit touching its folder, "
                     "`<sha>+dirty-<hash>` for uncommitted changes, or an npm tarball's integrity.",
    "task_id": "The task–verifier pair; joins `tasks.task_id`.",
    "trajectory_id": "One episode of a policy on a task; joins `trajectories.trajectory_id`.",
    "policy": "What acted: `replay` (the reference solution), `scripted-noisy` (a simulator of an imperfect "
              "agent), `simulated-learner` (a simulator whose faults fall for families in earlier exports: a "
              "stand-in for training, not a model), `llm`, an imported agent's name; `@phone` when run under the "
              "phone profile.",
    "family": "The task family (create, update, delete, search, multi_step, move, shell, …); of tasks born from "
              "failures, a variant keeps its parent's family, a sub-goal is `subgoal`, a longer chain `chain`.",
    "detector_version": "The failure-mining detector version that produced the row.",
    "step_index": "The step's position in its trajectory, from 0.",
    "started_at": "When it started (UTC).",
    "finished_at": "When it ended (UTC).",
    "model": "The LLM model name, when a model was involved (null for scripted policies and agents).",
    "agent": "The coding agent that wrote it: `static` (offline) or `llm`.",
    "error": "What went wrong, when something did (null otherwise).",
}

DESCRIPTIONS: dict[str, tuple[str, dict[str, str]]] = {
    "tasks": (
        "Task–verifier pairs, the latest version of each (`tasks_history` has every row: a status change or a "
        "retirement is a new row, never an edit).",
        {
            "version": "Version of the pair; a new source commit that still passes makes version + 1.",
            "app_area": "The part of the app the task exercises: a route pattern, a form action or a table "
                        "(the same names as `coverage.area`).",
            "difficulty": "easy | medium | hard, as the synthesiser rated it.",
            "instruction": "The request a person would make, as given to the policy.",
            "status": "candidate | verified (passed the validation gate) | rejected | retired.",
            "reason": "Why it was rejected or retired: a gate reason code (passes_initially, "
                      "fails_after_reference, flaky, passes_truncated, inject_error, probe_error, timeout, "
                      "sandbox_error, unsafe_code, …) or superseded_on_new_commit, "
                      "verifier_broken_on_new_commit, flagged_by_reviewer, retired_by_agent.",
            "reason_detail": "The evidence behind the reason (free text or JSON).",
            "seed": "The random seed the task's parameters were drawn with.",
            "params_json": "The family's parameters for this task (JSON object).",
            "injection_json": "How the sandbox is put into the task's starting state: [{skill_id, args}] (JSON).",
            "verifier_json": "The verifier: {template, params} or a code verifier written by the LLM agent (JSON).",
            "reference_json": "The reference solution: UI actions that complete the task (JSON list).",
            "provenance_json": "Who made the pair: agent, model, prompt hash, synthesiser version; for tasks born "
                               "from failures (agent from-failures) also their lineage: parent_task_id, seed_id "
                               "(failure_seeds.seed_id), failure_kind, failure_reason, strategy (variant, subgoal, chain), "
                               "parent_pool, partner_task_id (a chain's second task); supersedes for a new version "
                               "(JSON object).",
        },
    ),
    "skills": (
        "Data-injection skills: code or SQL that puts a sandbox into a known state.",
        {
            "skill_id": "The skill; tasks name it in `injection_json`.",
            "name": "Short name of the skill.",
            "kind": "How it runs: sql, python, files, local_storage, ui_replay, …",
            "description": "What state it creates.",
            "spec_json": "The skill itself: its SQL, code or recorded actions and its arguments (JSON).",
        },
    ),
    "validation_runs": (
        "One row per check the validation gate ran on a candidate pair: initial, reference, repeat, truncated, "
        "and a final `gate` row with the outcome.",
        {
            "stage": "initial (the verifier must fail) | reference (must pass after the reference solution) | "
                     "repeat (must pass again) | truncated (must fail without the last action) | gate (outcome).",
            "passed": "Whether the verifier passed at this stage.",
            "expected": "Whether passing was the expected result at this stage.",
            "verdict_reason": "The verifier's reason for its verdict.",
            "evidence_json": "What the probes observed (JSON).",
            "duration_s": "Seconds the stage took.",
        },
    ),
    "trajectories": (
        "One row per episode of a policy on a task, whatever produced it (rollouts and imports).",
        {
            "task_version": "The task version the episode ran.",
            "instruction": "The request the episode worked on, as the policy was given it (imports keep the source's own).",
            "episode": "Episode number for this (policy, task) in its run, from 0.",
            "num_steps": "Number of model turns.",
            "ended": "terminated (the policy stopped) | max_steps | env_error (the environment failed).",
            "end_detail": "More about how it ended (e.g. the environment error).",
            "final_answer": "The answer the policy gave, for tasks that ask a question.",
            "evidence_json": "The verifier's probes after injection and at the end (JSON).",
            "injected_faults_json": "Faults a simulator policy made on purpose, to measure mining (JSON list).",
            "duration_s": "Seconds the episode took.",
        },
    ),
    "steps": (
        "One row per model turn of a trajectory (a turn may carry a batch of actions).",
        {
            "screenshot_sha": "The screenshot before the turn: a blob at blobs/sha256/<ab>/<cd>/<sha>.",
            "screen_width": "Screen width in pixels.",
            "screen_height": "Screen height in pixels.",
            "ui_tree_sha": "The UI tree (ARIA snapshot or uiautomator dump) before the turn, as a blob.",
            "url": "The page URL (or android-app:// activity) before the turn.",
            "raw_output": "What the policy emitted, unparsed.",
            "actions_json": "The parsed actions of the turn, in the typed action space (JSON list).",
            "format_error": "Why the output did not parse (the step is kept, its actions empty).",
            "ok": "Whether every action ran without error.",
            "points_json": "Where each action landed on the 0..999 grid ([x, y] or [x, y, x2, y2]) (JSON list).",
            "outputs_json": "What each action returned, e.g. a shell command's exit_code, stdout, stderr (JSON).",
            "sensitive": "The manifest's sensitive kind of the control acted on (pay, send, delete, …), if any.",
        },
    ),
    "verdicts": (
        "AutoJudge's verdict per judged trajectory: the verifier's vote plus LLM judges' votes when a model is set.",
        {
            "verdict": "pass | failed | env_error (the environment failed; never counts against a policy).",
            "reason": "Why, in the deciding voter's words.",
            "votes_json": "Every voter's vote and reason: [{voter, vote, reason}] (JSON list).",
            "agreement": "Share of counted voters that agree with the verdict (0..1).",
            "judge_version": "The AutoJudge version.",
        },
    ),
    "pools": (
        "Curriculum pool of each (policy, task), the latest (`pools_history` has every move).",
        {
            "pool": "active (learnable now) | monitoring | mastered.",
            "success_rate": "The policy's pass rate on the task over its judged episodes (0..1).",
            "episodes": "How many judged episodes the rate is over.",
        },
    ),
    "failures": (
        "Mined failures: one row per finding, a step range of one trajectory.",
        {
            "failure_id": "The finding.",
            "first_step": "First step of the finding.",
            "last_step": "Last step of the finding.",
            "kind": "loop | bad_args | sensitive | premature.",
            "evidence_level": "What the finding rests on: actions | reasoning (the model said its action did not work) | url | ui_tree | screenshot | errors | manifest.",
            "confidence": "How sure the detector is, 0..1 (e.g. grows with how often and how closely actions repeat).",
            "reason": "The reason code: exact_repeat, short_cycle, no_progress, format_error, coords_out_of_range, "
                      "click_hit_nothing, unconfirmed_sensitive, overcautious, …",
            "severity": "How bad, 0..1.",
            "evidence_json": "What the detector saw (JSON).",
        },
    ),
    "step_rewards": (
        "Per-step signals for Action-RL from mine-failures: Ct, Qt, St, Lt and the combined reward, one row per mined "
        "step (mining writes only the steps whose reward differs from a clean step's: `step_rewards_sparse`).",
        {
            "ct": "Action-type correctness Ct (0..1).",
            "qt": "Argument quality Qt (0..1).",
            "st": "Sensitive-action penalty St.",
            "lt": "Repetition penalty Lt.",
            "reward": "The combined reward under weights_json.",
            "weights_json": "The weights that combined Ct, Qt, St, Lt (JSON object).",
        },
    ),
    "mined": (
        "Which trajectories each detector version has mined, so re-runs mine only new ones.",
        {
            "undecidable_json": "Checks that could not run (no screenshot, no UI tree), counted (JSON).",
            "weights_json": "The weights the trajectory's step rewards were combined with (JSON object); set when "
                            "only the steps with a finding were written to step_rewards_sparse.",
        },
    ),
    "failure_seeds": (
        "Targeted seeds for synthesis: a weakness seen in a task, with its step context.",
        {
            "seed_id": "The seed; tasks born from it carry it as provenance_json->>'seed_id'.",
            "kind": "The failure kind (loop, bad_args, sensitive, premature).",
            "reason": "The failure's reason code.",
            "context_json": "The steps around the weakness (JSON).",
        },
    ),
    "llm_calls": (
        "One row per LLM call, cache hits included (cost 0), with the raw request and response.",
        {
            "call_id": "The call.",
            "request_hash": "Hash of the request: the cache key.",
            "purpose": "policy | judge | agent | explore_request | doctor.",
            "api_base": "The server called.",
            "prompt_tokens": "Prompt tokens.",
            "completion_tokens": "Completion tokens.",
            "cost_usd": "Cost in US dollars (0 for cache hits and unpriced local models).",
            "latency_s": "Seconds until the answer.",
            "cache_hit": "Whether the answer came from the persistent cache.",
            "request_json": "The raw request (JSON).",
            "response_json": "The raw response (JSON).",
        },
    ),
    "agent_transcripts": (
        "The LLM coding agent's conversations: one row per message or event, in order per session.",
        {
            "session_id": "One conversation (a run on one sandbox).",
            "turn": "Position in the session, from 0.",
            "role": "system | user | assistant | tool | event.",
            "content": "The message text or tool result.",
            "tool_calls_json": "The assistant's tool calls, raw as the model sent them (JSON).",
            "tool_name": "The tool a tool message answers.",
            "tool_call_id": "The tool call a tool message answers.",
            "error": "A tool error (bad JSON, unknown tool, bad arguments), llm_error or budget_exhausted.",
            "llm_call_id": "The LLM call behind an assistant message; joins `llm_calls.call_id`.",
        },
    ),
    "quarantine": (
        "Rows that did not fit their table's schema, or records an import refused, with the reason.",
        {
            "source_table": "The table the row was meant for.",
            "source": "Where it came from (run/batch, or the imported file and line).",
            "record_json": "The record as it was (JSON).",
            "reason": "Why it was refused (e.g. schema_mismatch: …).",
        },
    ),
    "reviews": (
        "Human review decisions, each reviewer's latest per item (`reviews_history` has every decision).",
        {
            "review_id": "One decision (chosen by the browser, so a retried request replaces its own row).",
            "item_kind": "task | trajectory.",
            "item_id": "The task_id or trajectory_id reviewed.",
            "reviewer": "Who decided.",
            "decision": "accept | reject | relabel | flag_verifier.",
            "reason": "Why, for reject and flag_verifier.",
            "label": "The corrected verdict for relabel: pass | failed | env_error.",
            "judge_label": "What AutoJudge said, for trajectories.",
            "sample_id": "The review sample the item was drawn in.",
            "decided_at": "When the decision was made (UTC).",
        },
    ),
    "coverage": (
        "What each sandbox offers (areas) and how well it is covered; one row per (explore run, sandbox, area), "
        "before and after the run.",
        {
            "area": "A screen (route pattern such as /messages/<>), a form action (POST /messages/<>/star) or a "
                    "data entity (table messages).",
            "area_kind": "screen | action | entity.",
            "exists_from": "source (read from the app's source) | exploration (found by exploring).",
            "phase": "before | after the explore run.",
            "verified_tasks": "Verified tasks in the area.",
            "trajectories": "Trajectories that touched the area.",
            "failures": "Mined failures in the area.",
        },
    ),
    "transitions": (
        "The explorer's transition graph: abstract states, the action taken and what it changed.",
        {
            "from_state": "Abstract state before (URL pattern + structural hash of the UI tree).",
            "from_url": "URL before.",
            "path_json": "The actions that lead from a reset sandbox to from_state (JSON list).",
            "action_json": "The actions of this transition: fills, then the click (JSON list).",
            "to_state": "Abstract state after; null when the action was not performed.",
            "to_url": "URL after.",
            "diff_json": "What changed: DB rows for sqlite state, page state otherwise (JSON).",
            "changed_state": "Whether the app's state changed.",
            "area": "The coverage area of the transition.",
            "sensitive": "The manifest's sensitive kind of the control, if any.",
            "outcome": "performed | skipped_sensitive | error.",
            "revisit": "Whether to_state had been discovered before.",
        },
    ),
    "exports": (
        "One row per export build that reached the quality gate: published versions and refused builds.",
        {
            "name": "The dataset name (exports/<name>/).",
            "version": "v0001, v0002, … under exports/<name>/; null for a build the gate refused.",
            "format": "messages | action-rl.",
            "config_hash": "Hash of everything that decides the dataset's bytes.",
            "config_json": "The export's config (JSON).",
            "rows": "Rows in the dataset.",
            "steps": "Steps the rows hold.",
            "trajectories": "Trajectories the rows come from.",
            "files_json": "The shards: [{path, rows, bytes, sha256}] (JSON).",
            "manifest_hash": "sha256 of manifest.json.",
            "gate_result_path": "Where the Great Expectations result is.",
            "gate_success": "Whether the quality gate passed (only then is a version published).",
            "lineage_json": "Where the rows came from: source commits, task versions, policies, judge (JSON).",
            "path": "The published folder.",
        },
    ),
    "runs": (
        "Every flow run: what was asked, when, how it ended and what it counted; the latest row per invocation "
        "(`runs_history` has the running row too).",
        {
            "invocation_id": "One call of a flow (a running row and a final row share it).",
            "parent_invocation_id": "The flow that called this one (a cycle's stages), else null.",
            "run_id": "The run id the flow's rows carry in other tables, when the flow names one.",
            "flow": "synthesize-tasks | rollout | judge | mine-failures | curriculum | explore | export-sft | cycle.",
            "status": "running | completed | failed | killed (its process ended without saying how: found by the next "
                      "flow run on the same host).",
            "parameters_json": "The flow's parameters (JSON object).",
            "counts_json": "The numbers the flow reported: episodes, verdicts per label, rows, … (JSON object).",
            "error": "The exception that ended a failed run; for a killed one, which process ended.",
            "owner": "The process that ran it, host:pid:start time in clock ticks (null in rows written before it was kept).",
        },
    ),
}

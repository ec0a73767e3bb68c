-- Questions an analyst asks the lake, answered from the catalog alone (docs/lake.md says what each column means).
-- Run one:   .venv/bin/duckdb -readonly lake/catalog.duckdb < docs/analyst_questions.sql
-- or paste a query into `.venv/bin/duckdb -readonly lake/catalog.duckdb`, or `flywheel lake sql "…"`.
-- Each query ends with a semicolon; tests/lake/test_analyst_questions.py runs every one on a real lake.

-- [1] Pass rate by family over time: per day, policy and task family, over judged episodes
--     (env_error is the environment's fault and never counts against a policy).
WITH judged AS (  -- the latest verdict of each trajectory (a re-judged one counts once)
    SELECT * FROM verdicts
    QUALIFY row_number() OVER (PARTITION BY trajectory_id ORDER BY recorded_at DESC) = 1
)
SELECT date_trunc('day', tr.started_at) AS day,
       v.policy,
       t.sandbox,
       t.family,
       count(*) AS episodes,
       round(avg(CASE WHEN v.verdict = 'pass' THEN 1.0 ELSE 0.0 END), 3) AS pass_rate
FROM judged v
JOIN trajectories tr USING (trajectory_id)
JOIN tasks t ON t.task_id = v.task_id
WHERE v.verdict != 'env_error'
GROUP BY ALL
ORDER BY day, v.policy, t.sandbox, t.family;

-- [2] Top failure kinds by app area: the three most frequent (kind, reason) mined in each area of each app.
SELECT sandbox, app_area, kind, reason, findings, trajectories, rank
FROM (
    SELECT t.sandbox,
           t.app_area,
           f.kind,
           f.reason,
           count(*) AS findings,
           count(DISTINCT f.trajectory_id) AS trajectories,
           row_number() OVER (PARTITION BY t.sandbox, t.app_area ORDER BY count(*) DESC, f.kind, f.reason) AS rank
    FROM failures f
    JOIN tasks t ON t.task_id = f.task_id
    GROUP BY t.sandbox, t.app_area, f.kind, f.reason
)
WHERE rank <= 3
ORDER BY sandbox, app_area, rank;

-- [3] Tasks born from failures: each task synthesised from a failure seed, the task and failure it came
--     from, whether it passed the gate, and whether policies solve it in later rollouts (its lineage is in
--     provenance_json: parent_task_id, seed_id, failure_kind; see docs/lake.md).
SELECT t.sandbox,
       t.task_id,
       t.family,
       t.status,
       t.provenance_json->>'parent_task_id' AS parent_task_id,
       t.provenance_json->>'seed_id' AS seed_id,
       t.provenance_json->>'failure_kind' AS failure_kind,
       count(v.trajectory_id) AS judged_episodes,
       count(v.trajectory_id) FILTER (WHERE v.verdict = 'pass') AS passed,
       round(avg(CASE WHEN v.verdict = 'pass' THEN 1.0 WHEN v.verdict IS NOT NULL THEN 0.0 END), 3) AS pass_rate
FROM tasks t
LEFT JOIN verdicts v ON v.task_id = t.task_id AND v.verdict != 'env_error'
WHERE (t.provenance_json->>'seed_id') IS NOT NULL
GROUP BY ALL
ORDER BY t.sandbox, failure_kind, t.task_id;

-- [3b] The same, per failure kind: how many tasks each kind of failure gave birth to, how many the gate
--      verified, and how many of those a policy has solved at least once.
SELECT t.provenance_json->>'failure_kind' AS failure_kind,
       count(DISTINCT t.task_id) AS born,
       count(DISTINCT t.task_id) FILTER (WHERE t.status = 'verified') AS verified,
       count(DISTINCT t.task_id) FILTER (WHERE v.verdict = 'pass') AS solved
FROM tasks t
LEFT JOIN verdicts v ON v.task_id = t.task_id
WHERE (t.provenance_json->>'seed_id') IS NOT NULL
GROUP BY ALL
ORDER BY born DESC, failure_kind;

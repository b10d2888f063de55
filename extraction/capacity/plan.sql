-- The capacity plan's reads of the attempt ledger and the jobs table (extraction/capacity/plan.py).


-- name: observed_stats
-- The newest attempts by primary key (a backward scan of the pk index that stops after
-- ``sample`` rows), kept when in the window and of the pool's policies. Their finished jobs'
-- spent attempts are then counted through the ledger's (job_id, fence) index.
WITH recent AS (
    SELECT a.job_id, a.outcome, a.latency_ms, a.input_tokens, a.output_tokens, a.started_at, a.provider
      FROM extraction_attempts a
     ORDER BY a.id DESC
     LIMIT %(sample)s
)
, in_pool AS (
    SELECT r.job_id, r.outcome, r.latency_ms, r.input_tokens, r.output_tokens, j.state
      FROM recent r
      JOIN extraction_jobs j ON j.id = r.job_id
     WHERE r.started_at >= now() - make_interval(secs => %(window)s)
       AND j.model_policy = ANY(%(policies)s)
       AND r.provider <> ALL(%(poolless)s)
)
, finished AS (
    SELECT (SELECT count(*) FROM extraction_attempts a
             WHERE a.job_id = f.job_id AND a.outcome <> ALL(%(unspent)s)) AS attempts
      FROM (SELECT DISTINCT job_id FROM in_pool WHERE state = ANY(%(finished)s)) AS f
)
SELECT (SELECT avg(latency_ms) FROM in_pool WHERE latency_ms IS NOT NULL AND outcome = ANY(%(answered)s)),
       (SELECT count(*) FROM in_pool WHERE latency_ms IS NOT NULL AND outcome = ANY(%(answered)s)),
       (SELECT avg(attempts) FROM finished WHERE attempts > 0),
       (SELECT count(*) FROM finished WHERE attempts > 0),
       (SELECT avg(input_tokens + output_tokens) FROM in_pool
         WHERE input_tokens IS NOT NULL AND output_tokens IS NOT NULL AND outcome = ANY(%(answered)s)),
       (SELECT count(*) FROM in_pool
         WHERE input_tokens IS NOT NULL AND output_tokens IS NOT NULL AND outcome = ANY(%(answered)s))


-- name: pool_backlog
-- Jobs of the pool not done yet. Two counts, each matching one partial index's predicate
-- (job_pending_deadline_idx, job_running_tenant_idx): one IN list of all four states matches
-- neither, and PostgreSQL would scan the whole table.
SELECT (SELECT count(*) FROM extraction_jobs
         WHERE state IN (job_state_accepted(), job_state_ready(), job_state_retry_scheduled())
           AND model_policy = ANY(%(policies)s))
     + (SELECT count(*) FROM extraction_jobs
         WHERE state = job_state_running() AND model_policy = ANY(%(policies)s))

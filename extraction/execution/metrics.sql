-- The job backlog as /metrics reports it (extraction/execution/metrics.py runs these).
-- Statements given to config.metrics.bounded_count and planner_rows take positional %s
-- parameters: bounded_count appends its own LIMIT parameter to them.


-- name: eligible_jobs
-- Claimable now: job_runnable_idx (available_at, id) serves both this count and the minimum.
SELECT 1 FROM extraction_jobs
 WHERE state IN (job_state_ready(), job_state_retry_scheduled()) AND available_at <= now() AND deadline_at > now()


-- name: oldest_eligible_age
SELECT extract(epoch FROM now() - min(available_at)) FROM extraction_jobs
 WHERE state IN (job_state_ready(), job_state_retry_scheduled()) AND available_at <= now() AND deadline_at > now()


-- name: bounded_job_count
-- Small or large is decided by a bounded scan, not by the planner's row estimate, which can
-- be stale (a table emptied since its last ANALYZE still "has" its old rows).
SELECT count(*) FROM (SELECT 1 FROM extraction_jobs LIMIT %(cap)s) AS bounded


-- name: jobs_by_state
SELECT state, count(*) FROM extraction_jobs GROUP BY state


-- name: jobs_in_state
-- Counted through the pending states' partial indexes (bounded), or estimated by the planner.
SELECT 1 FROM extraction_jobs WHERE state = %s

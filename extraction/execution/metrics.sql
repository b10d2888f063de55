-- The job backlog as /metrics reports it (extraction/execution/metrics.py runs these).
-- A set config.metrics.bounded_count counts has two statements: count_..._bounded, exact up
-- to %(limit)s rows (bounded_count passes the cap + 1), and estimate_..., the planner's
-- estimate of the same query for past the cap.


-- name: count_eligible_jobs_bounded
-- Claimable now: job_runnable_idx (available_at, id) serves this count, its estimate and the
-- minimum below.
SELECT count(*) FROM (
    SELECT 1 FROM extraction_jobs
     WHERE state IN (job_state_ready(), job_state_retry_scheduled()) AND available_at <= now() AND deadline_at > now()
     LIMIT %(limit)s
) AS bounded


-- name: estimate_eligible_jobs
EXPLAIN (FORMAT JSON)
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


-- name: count_jobs_in_state_bounded
-- A pending state, counted through its partial index.
SELECT count(*) FROM (SELECT 1 FROM extraction_jobs WHERE state = %(state)s LIMIT %(limit)s) AS bounded


-- name: estimate_jobs_in_state
-- Past the cap, and for the big terminal states (no index by state), the planner's estimate.
EXPLAIN (FORMAT JSON) SELECT 1 FROM extraction_jobs WHERE state = %(state)s

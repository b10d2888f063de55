-- What the autoscaling signal reads of a provider pool (extraction/capacity/autoscale.py).


-- name: pool_demand
-- 1. Jobs of the pool's policies eligible now, counted up to %(cap)s (job_runnable_idx).
-- 2. Its RUNNING jobs (job_running_tenant_idx: the few RUNNING rows).
-- 3. Its jobs accepted in the last %(window)s seconds, up to %(cap)s per tenant: one range of
--    job_tenant_created_idx per tenant (LATERAL, so the planner cannot trade it for a scan of
--    the whole table). Past the cap the eligible backlog counts the rest.
SELECT (SELECT count(*) FROM (
            SELECT 1 FROM extraction_jobs
             WHERE state IN (job_state_ready(), job_state_retry_scheduled()) AND available_at <= now()
               AND deadline_at > now() AND model_policy = ANY(%(policies)s)
             LIMIT %(cap)s) AS eligible),
       (SELECT count(*) FROM extraction_jobs
         WHERE state = job_state_running() AND model_policy = ANY(%(policies)s)),
       (SELECT count(*) FROM accounts_tenant t, LATERAL (
            SELECT 1 FROM extraction_jobs j
             WHERE j.tenant_id = t.id AND j.created_at >= now() - make_interval(secs => %(window)s)
               AND j.model_policy = ANY(%(policies)s)
             LIMIT %(cap)s) AS arrived)

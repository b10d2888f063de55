-- The capacity benchmark's baseline claim (bench/baseline_claim.py swaps it in for the fair
-- claim in a benchmark's own worker processes; production has only the fair claim).


-- name: claim_fifo
-- Plain FIFO: the oldest ``count`` runnable jobs first, whoever they belong to, and no tenant's
-- in-flight cap: the baseline to compare the fair claim with. The take and what it
-- records are claim_fair's; "more eligible" is unknown, so a slot keeps claiming.
WITH next AS (
    SELECT j.id, j.state AS prior_state
      FROM extraction_jobs j
     WHERE j.state IN (job_state_ready(), job_state_retry_scheduled()) AND j.available_at <= now()
       AND j.deadline_at > now() AND j.model_policy = ANY(%(policies)s)
     ORDER BY j.available_at, j.id
     FOR UPDATE SKIP LOCKED
     LIMIT %(count)s
)
, taken AS (
    UPDATE extraction_jobs AS j
       SET state = job_state_running(), attempt = j.attempt + 1, fence = j.fence + 1,
           lease_owner = %(worker)s, lease_until = now() + make_interval(secs => %(lease)s),
           state_version = j.state_version + 1, updated_at = now()
      FROM next
     WHERE j.id = next.id
    RETURNING j.id, j.tenant_id, j.document_id, j.schema, j.model_policy, j.options, j.attempt,
              j.max_attempts, j.fence, j.deadline_at, j.first_page, j.last_page, j.state_version, next.prior_state, true AS more_eligible
)
, recorded AS (
    SELECT extraction_append_job_event(id, tenant_id, state_version, prior_state, job_state_running(), 'claimed',
                                       jsonb_build_object('attempt', attempt, 'fence', fence))
      FROM taken
)
, opened_attempt AS (
    INSERT INTO extraction_attempts (job_id, number, fence, worker_id, started_at, outcome, provider, model,
                                     provider_request_id, error_detail)
    SELECT id, attempt, fence, %(worker)s, now(), 'running', '', '', '', ''
      FROM taken
)
SELECT taken.id, taken.tenant_id, taken.document_id, taken.schema, taken.model_policy, taken.options,
       taken.attempt, taken.max_attempts, taken.fence, extract(epoch FROM taken.deadline_at)::float8,
       taken.more_eligible, (SELECT t.policy_revision FROM accounts_tenant AS t WHERE t.id = taken.tenant_id),
       taken.first_page, taken.last_page
  FROM taken, recorded

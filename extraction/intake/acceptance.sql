-- Durable acceptance (extraction/intake/acceptance.py runs these).


-- name: accept_job
-- ACC-5 in one statement, so the tenant's usage row (the one lock every accept of a tenant
-- queues on) is held only for this statement and the COMMIT, not across four round trips:
--   job       INSERT ... ON CONFLICT (tenant_id, idempotency_key) DO NOTHING RETURNING id.
--             A concurrent request with the same key waits here for the first to commit.
--   charge    the guarded UPDATE of the usage row, only if the job was inserted (BP-1): no
--             row when a limit would be passed. A spend of an earlier day counts as 0.
--   recorded  the extraction.requested.v1 outbox event and the job's first event
--             (state_version 1), only on the inserting branch, and only if charged. A SELECT
--             in WITH runs only as far as it is read: the final EXISTS reads it.
-- The request's trace context goes with the job and its event ({} when untraced), so the
-- relay, the workers and the deliveries join the request's trace.
-- Returns (inserted, charged); the caller rolls the whole transaction back when the job was
-- inserted but not charged.
WITH job AS (
    INSERT INTO extraction_jobs (
        id, tenant_id, document_id, document_version, idempotency_key, request_hash,
        schema, model_policy, options, priority_class, state, state_version, attempt,
        max_attempts, fence, lease_owner, available_at, deadline_at, estimated_tokens,
        byte_size, error_class, error_detail, trace_context, created_at, updated_at)
    VALUES (%(job)s, %(tenant)s, %(document)s, %(version)s, %(key)s, %(hash)s, %(schema)s, %(policy)s,
            %(options)s, %(priority)s, job_state_accepted(), 1, 0, %(max_attempts)s, 0, '', now(),
            now() + make_interval(secs => %(deadline)s), %(tokens)s, %(bytes)s, '', '',
            %(trace_context)s::jsonb, now(), now())
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING id
)
, charge AS (
    UPDATE accounts_tenantusage AS u
       SET pending_jobs = u.pending_jobs + 1,
           pending_bytes = u.pending_bytes + %(bytes)s,
           reserved_tokens = u.reserved_tokens + %(tokens)s,
           spent_today_micros = tenant_daily_spend(u.spend_day, u.spent_today_micros, 0, 0),
           spend_day = current_date
      FROM accounts_tenant AS t
     WHERE u.tenant_id = t.id AND t.id = %(tenant)s AND EXISTS (SELECT 1 FROM job)
       AND u.pending_jobs + 1 <= t.max_pending_jobs
       AND u.pending_bytes + %(bytes)s <= t.max_pending_bytes
       AND u.reserved_tokens + %(tokens)s <= t.max_reserved_tokens
       AND tenant_daily_spend(u.spend_day, u.spent_today_micros, u.reserved_tokens + %(tokens)s, %(price)s)
           <= t.daily_spend_limit_micros
    RETURNING u.tenant_id
)
, recorded AS (
    SELECT extraction_append_outbox_event(%(event)s, job.id, %(tenant)s, %(event_type)s, %(payload)s::jsonb,
                                          %(trace_context)s::jsonb),
           extraction_append_job_event(job.id, %(tenant)s, 1, '', job_state_accepted(), 'accepted', '{}')
      FROM job, charge
)
SELECT EXISTS (SELECT 1 FROM job), EXISTS (SELECT 1 FROM recorded)


-- name: tenant_limits
-- Which admission limit refused a request: the tenant's usage against its limits, the spend
-- as the charge judges it (with the reserved tokens at this policy's price).
SELECT u.pending_jobs, t.max_pending_jobs, u.pending_bytes, t.max_pending_bytes,
       u.reserved_tokens, t.max_reserved_tokens,
       tenant_daily_spend(u.spend_day, u.spent_today_micros, u.reserved_tokens, %(price)s),
       t.daily_spend_limit_micros
  FROM accounts_tenantusage u JOIN accounts_tenant t ON t.id = u.tenant_id
 WHERE t.id = %(tenant)s

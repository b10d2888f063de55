-- The job state machine's statements (extraction/execution/lifecycle.py runs them).
--
-- Every transition is one statement: the guarded UPDATE of the job (``moved``) decides, and
-- what it records reads ``moved``, so it exists exactly when the job moved. Other tables' rows
-- come from the functions of extraction/functions.sql (extraction_append_job_event,
-- extraction_append_outbox_event, extraction_release_admission). A SELECT in WITH runs only as
-- far as the outer query reads it, so each final SELECT reads the CTE that calls them
-- (``FROM moved, recorded`` or ``EXISTS (SELECT FROM recorded)``).


-- name: take_in_requested_events
-- Ingress (BRK-2, BRK-3) for the messages that arrived together, the usual case in one
-- statement: each one's inbox row, its job ACCEPTED -> READY and the job's event (both pending
-- states: no budget changes hands). Returns the messages whose inbox row was written, with
-- moved = whether the job was still ACCEPTED; the others were in the inbox already (the same
-- event id in one batch twice: the first is written) or name no job, and are sorted apart. A
-- Kafka record brings its coordinates (topic, partition, offset); a RabbitMQ message has none.
-- A job made READY wakes the dispatchers (``runnable``).
WITH arrived AS (
    SELECT *
      FROM unnest(%(events)s::uuid[], %(digests)s::text[], %(jobs)s::uuid[], %(topics)s::text[],
                  %(partitions)s::int[], %(offsets)s::bigint[])
        AS arrived(event_id, digest, job_id, topic, partition, record_offset)
)
, inbox AS (
    INSERT INTO execution_inbox (event_id, job_id, payload_digest, received_at,
                                 source_topic, source_partition, source_offset)
    SELECT a.event_id, j.id, a.digest, now(), a.topic, a.partition, a.record_offset
      FROM arrived AS a JOIN extraction_jobs AS j ON j.id = a.job_id
    ON CONFLICT (event_id) DO NOTHING
    RETURNING event_id, job_id
)
, moved AS (
    UPDATE extraction_jobs AS j
       SET state = job_state_ready(), state_version = j.state_version + 1, updated_at = now()
      FROM inbox
     -- id = ANY(jobs): found by key in every plan (joined to ``inbox`` alone, a generic plan could
     -- walk a partial index of every pending job).
     WHERE j.id = ANY(%(jobs)s::uuid[]) AND j.id = inbox.job_id AND j.state = job_state_accepted()
    RETURNING j.id, j.tenant_id, j.state_version, inbox.event_id
)
, recorded AS (
    SELECT extraction_append_job_event(id, tenant_id, state_version, job_state_accepted(), job_state_ready(),
                                       'taken_in', jsonb_build_object('event_id', event_id::text))
      FROM moved
)
-- The llm workers' dispatchers LISTEN on runnable_jobs (extraction.execution.dispatcher): one
-- notification, delivered at COMMIT, however many jobs became runnable.
, runnable AS (
    SELECT pg_notify('runnable_jobs', '') FROM moved LIMIT 1
)
SELECT inbox.event_id, moved.id IS NOT NULL
  FROM inbox LEFT JOIN moved ON moved.event_id = inbox.event_id
 WHERE (SELECT count(*) FROM recorded) >= 0 AND (SELECT count(*) FROM runnable) >= 0


-- name: notify_runnable_jobs
-- Jobs became runnable outside a take-in (the scheduler, an operator's rerun): the dispatchers
-- claim for their free slots. Inside a transaction, delivered at its COMMIT.
SELECT pg_notify('runnable_jobs', '')


-- name: stored_inbox_digests
-- The digests of the messages take_in_requested_events did not write: the same event id in the
-- inbox already (a redelivery, or a conflicting message), or none (no such job).
SELECT event_id, payload_digest FROM execution_inbox WHERE event_id = ANY(%(events)s::uuid[])


-- name: claim_fair
-- The fair claim (EXE-1, BP-4) of up to ``count`` jobs with the take, the "claimed" events and
-- the attempts' ledger rows, in one autocommit statement; what is recorded reads the UPDATE's
-- RETURNING, so it exists exactly when a job was taken. The slots of a process that claim at
-- the same moment claim together (extraction.execution.claims), so ``count`` is how many wait.
--
-- 1. running: RUNNING jobs per tenant (job_running_tenant_idx).
-- 2. tenants: tenants with pending work, below their in-flight cap.
-- 3. candidates: each tenant's next few runnable jobs by effective time (available_at, minus
--    INTERACTIVE_PRIORITY_BOOST if interactive), two probes of job_fair_claim_idx per tenant,
--    as many as the tenant's cap still allows (rank: running + rank <= cap, checked per row).
-- 4. share = (tenant's running jobs + rank among its candidates) / weight, lowest first.
-- 5. fair: the best ``count`` candidates not locked by another claimer (SKIP LOCKED), re-checked
--    after the lock. N jobs taken this way are the jobs N single claims would take in turn.
-- 6. taken: RUNNING with attempt+1, fence+1 and a lease, by the database clock.
--
-- An idle tenant has share 0 and gets the next free slot, so a 1-job tenant waits for about one
-- slot however large another tenant's backlog is. The cap is checked against committed RUNNING
-- rows: claimers racing in one instant overshoot it by at most their number. more_eligible lets
-- a slot that took the last job stop rather than pay an empty claim (true after the fallback).
WITH running AS (
    SELECT tenant_id, count(*) AS n FROM extraction_jobs WHERE state = job_state_running() GROUP BY tenant_id
)
-- MATERIALIZED: the candidates' probes start from these few tenants in every plan; inlined,
-- a generic plan can probe the job index for every tenant and join afterwards.
, tenants AS MATERIALIZED (
    SELECT t.id, t.weight, t.max_in_flight, coalesce(r.n, 0) AS running
      FROM accounts_tenantusage u
      JOIN accounts_tenant t ON t.id = u.tenant_id
      LEFT JOIN running r ON r.tenant_id = u.tenant_id
     WHERE u.pending_jobs > 0 AND coalesce(r.n, 0) < t.max_in_flight
)
, ranked AS (
    SELECT c.id, c.effective_at, tn.running, tn.weight, tn.max_in_flight,
           row_number() OVER (PARTITION BY tn.id ORDER BY c.effective_at, c.id) AS rank
      FROM tenants tn
      CROSS JOIN LATERAL (
          (SELECT j.id, j.available_at - make_interval(secs => %(boost)s) AS effective_at, j.deadline_at
             FROM extraction_jobs j
            WHERE j.tenant_id = tn.id AND j.priority_class = 'interactive'
              AND j.state IN (job_state_ready(), job_state_retry_scheduled()) AND j.available_at <= now()
              AND j.model_policy = ANY(%(policies)s)
            ORDER BY j.available_at
            LIMIT %(per_tenant)s)
          UNION ALL
          (SELECT j.id, j.available_at AS effective_at, j.deadline_at
             FROM extraction_jobs j
            WHERE j.tenant_id = tn.id AND j.priority_class = 'batch'
              AND j.state IN (job_state_ready(), job_state_retry_scheduled()) AND j.available_at <= now()
              AND j.model_policy = ANY(%(policies)s)
            ORDER BY j.available_at
            LIMIT %(per_tenant)s)
      ) AS c
     -- The deadline is checked on the few candidates, not inside the probes, where the planner
     -- (taking the two conditions as independent) would scan job_pending_deadline_idx. An expired
     -- job holds a candidate slot until expire_deadlines takes it, within a scheduler interval.
     WHERE c.deadline_at > now()
)
, candidates AS (
    SELECT id, effective_at, (running + rank - 1)::float / weight AS share
      FROM ranked
     WHERE running + rank <= max_in_flight
)
-- Each candidate in order is looked up by its key and locked unless another claimer holds it.
-- LATERAL keeps that a lookup by key in every plan; a plain join lets a generic plan read every
-- runnable job, a cost that grows with the backlog.
, fair AS (
    SELECT j.id, j.prior_state, false AS fallback, c.share, c.effective_at
      FROM (SELECT id, share, effective_at FROM candidates ORDER BY share, effective_at LIMIT %(window)s) AS c
      CROSS JOIN LATERAL (
          SELECT j.id, j.state AS prior_state
            FROM extraction_jobs j
           WHERE j.id = c.id AND j.state IN (job_state_ready(), job_state_retry_scheduled())
             FOR UPDATE SKIP LOCKED
      ) AS j
     ORDER BY c.share, c.effective_at
     LIMIT %(count)s
)
-- Fallback: when a burst of claimers finds every fair candidate locked, one job is taken in
-- plain order of availability among the same eligible tenants (caps still apply), so no claimer
-- comes back empty while work waits. It runs only when the fair pick took nothing and there was
-- a candidate to lock. The tenants as an array filter keep it a walk of job_runnable_idx that
-- stops at the first unlocked job (a join gets misestimated into sorting every runnable job);
-- its bound: the older runnable jobs of tenants at their cap.
, next AS (
    SELECT id, prior_state, fallback, share, effective_at FROM fair
    UNION ALL
    (SELECT id, prior_state, true AS fallback, 0.0::float8 AS share, available_at AS effective_at FROM (
        SELECT j.id, j.state AS prior_state, j.available_at
          FROM extraction_jobs j
         WHERE NOT EXISTS (SELECT FROM fair) AND EXISTS (SELECT FROM candidates)
           AND j.state IN (job_state_ready(), job_state_retry_scheduled()) AND j.available_at <= now()
           AND j.deadline_at > now() AND j.model_policy = ANY(%(policies)s)
           AND j.tenant_id = ANY(ARRAY(SELECT id FROM tenants))
         ORDER BY j.available_at, j.id
         FOR UPDATE OF j SKIP LOCKED
         LIMIT 1) AS in_order)
)
, taken AS (
    UPDATE extraction_jobs AS j
       SET state = job_state_running(), attempt = j.attempt + 1, fence = j.fence + 1,
           lease_owner = %(worker)s, lease_until = now() + make_interval(secs => %(lease)s),
           state_version = j.state_version + 1, updated_at = now()
      FROM next
     WHERE j.id = next.id
    RETURNING j.id, j.tenant_id, j.document_id, j.schema, j.model_policy, j.options, j.attempt,
              j.max_attempts, j.fence, j.deadline_at, j.first_page, j.last_page, j.state_version, next.prior_state, next.fallback,
              next.share, next.effective_at
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
-- The deadline as epoch seconds: the Python timestamptz loader Django installs costs more
-- than the rest of reading the row. more_eligible: a candidate was left over (or the fallback
-- took this one). The tenant's policy_revision: the worker judges with its cached policy of
-- that revision, if it has one, and complete_jobs checks it is still current. A bundle's part
-- names its pages (null for a whole document): the worker reads only those. In the fair order,
-- as single claims would have taken them.
SELECT taken.id, taken.tenant_id, taken.document_id, taken.schema, taken.model_policy, taken.options,
       taken.attempt, taken.max_attempts, taken.fence, extract(epoch FROM taken.deadline_at)::float8,
       taken.fallback OR (SELECT count(*) FROM candidates) > (SELECT count(*) FROM taken),
       (SELECT t.policy_revision FROM accounts_tenant AS t WHERE t.id = taken.tenant_id),
       taken.first_page, taken.last_page
  FROM taken
 WHERE (SELECT count(*) FROM recorded) >= 0
 ORDER BY taken.share, taken.effective_at


-- name: extend_leases
-- EXE-2: one heartbeat for many in-flight jobs; returns the ids whose ownership is lost (a
-- newer fence, or a lease that expired while RUNNING). A job that left RUNNING under our own
-- fence was moved by us: not lost.
WITH owned AS (
    SELECT * FROM unnest(%(ids)s::uuid[], %(fences)s::bigint[]) AS owned(id, fence)
)
, extended AS (
    UPDATE extraction_jobs AS j
       SET lease_until = now() + make_interval(secs => %(lease)s)
      FROM owned
     WHERE j.id = owned.id AND j.fence = owned.fence
       AND j.state = job_state_running() AND j.lease_until > now()
    RETURNING j.id
)
SELECT owned.id
  FROM owned LEFT JOIN extraction_jobs AS j ON j.id = owned.id
 WHERE owned.id NOT IN (SELECT id FROM extended)
   AND (j.id IS NULL OR j.fence <> owned.fence OR j.state = job_state_running())


-- name: lock_jobs_in_id_order
-- Before a statement that moves many jobs at once (a batch of completions, the heartbeat), their
-- rows locked in id order, so two such transactions over overlapping jobs wait for each other
-- instead of deadlocking. ORDER BY with FOR UPDATE locks the rows in the sorted order; an
-- UPDATE ... FROM takes them in whatever order its plan reads them.
SELECT id FROM extraction_jobs WHERE id = ANY(%(jobs)s::uuid[]) ORDER BY id FOR UPDATE


-- name: complete_jobs
-- EXE-3 for a batch of attempts in one statement: for each row of ``done``, the guarded move
-- under its own fence and a live lease, the attempt's ledger row, the event, the result and the
-- outbox event; the admission budget given back once per tenant (the jobs summed,
-- extraction_release_admissions). A row whose job is someone else's moves nothing and writes
-- nothing but its ledger row's stale verdict. A row judged with a revision of the tenant's
-- validation policy that is no longer current (VAL-2: the worker's cached policy, and the
-- policy changed since the claim) moves and writes nothing: the job stays the worker's, which
-- judges it again. Returns every row's verdict: won, stale or policy_changed.
--
-- The CTEs share one snapshot, so a job's spend adds this attempt's tokens (from ``done``) to its
-- earlier attempts' (the ledger still shows this one as running). A batch of more than one job
-- runs in a transaction after lock_jobs_in_id_order; one job runs alone, in autocommit.
WITH done AS (
    SELECT *
      FROM unnest(%(jobs)s::uuid[], %(fences)s::bigint[], %(attempts)s::int[], %(to_states)s::text[],
                  %(reasons)s::text[], %(details)s::jsonb[], %(outcomes)s::text[], %(providers)s::text[],
                  %(models)s::text[], %(request_ids)s::text[], %(input_tokens)s::int[], %(output_tokens)s::int[],
                  %(latencies_ms)s::int[], %(http_statuses)s::int[], %(retry_afters)s::float8[], %(errors)s::text[],
                  %(outputs)s::jsonb[], %(validations)s::jsonb[], %(policy_versions)s::text[],
                  %(prices)s::bigint[], %(event_ids)s::uuid[], %(event_types)s::text[], %(tenants)s::uuid[],
                  %(policy_revisions)s::bigint[])
        AS done(job, fence, attempt, to_state, reason, detail, outcome, provider, model, request_id,
                input_tokens, output_tokens, latency_ms, http_status, retry_after, error, output, validation,
                policy_version, price, event_id, event_type, tenant, policy_revision)
)
-- Read in the statement's snapshot: a policy change that commits while this runs is ordered
-- after the completion, as if it had come a moment later. A null revision is not checked.
, judged_with_old_policy AS (
    SELECT done.job
      FROM done JOIN accounts_tenant AS t ON t.id = done.tenant
     WHERE t.policy_revision <> done.policy_revision
)
, moved AS (
    UPDATE extraction_jobs AS j
       SET state = done.to_state, state_version = j.state_version + 1, updated_at = now(),
           lease_owner = '', lease_until = NULL, error_class = '', error_detail = ''
      FROM done
     -- id = ANY(jobs): the rows are found by their key in every plan; joined to ``done`` alone, a
     -- generic plan walked every RUNNING job (job_running_tenant_idx) for each batch.
     WHERE j.id = ANY(%(jobs)s::uuid[]) AND j.id = done.job
       AND j.state = job_state_running() AND j.fence = done.fence AND j.lease_until > now()
       AND done.job NOT IN (SELECT job FROM judged_with_old_policy)
    RETURNING j.id, j.tenant_id, j.state_version, j.byte_size, j.estimated_tokens, j.created_at
)
, ended AS (
    UPDATE extraction_attempts AS a
       SET ended_at = coalesce(a.ended_at, now()),
           outcome = CASE WHEN moved.id IS NOT NULL THEN done.outcome ELSE 'stale_completion' END,
           provider = done.provider, model = done.model, provider_request_id = done.request_id,
           input_tokens = done.input_tokens, output_tokens = done.output_tokens, latency_ms = done.latency_ms,
           http_status = done.http_status, retry_after_seconds = done.retry_after,
           error_detail = CASE WHEN moved.id IS NOT NULL THEN done.error
                               ELSE 'completion refused: fence or lease no longer ours' END
      FROM done LEFT JOIN moved ON moved.id = done.job
     WHERE a.job_id = done.job AND a.fence = done.fence AND done.job NOT IN (SELECT job FROM judged_with_old_policy)
)
, won AS (
    SELECT moved.id, moved.tenant_id, moved.state_version, moved.byte_size, moved.estimated_tokens,
           done.fence, done.attempt, done.to_state, done.reason, done.detail, done.output, done.validation,
           done.policy_version, done.provider, done.model, done.event_id, done.event_type,
           token_cost_micros(
               (SELECT coalesce(sum(coalesce(a.input_tokens, 0) + coalesce(a.output_tokens, 0)), 0)
                  FROM extraction_attempts AS a WHERE a.job_id = moved.id AND a.fence <> done.fence)
               + coalesce(done.input_tokens, 0) + coalesce(done.output_tokens, 0),
               done.price) AS spend_micros
      FROM moved JOIN done ON done.job = moved.id
)
, recorded AS (
    SELECT extraction_append_job_event(id, tenant_id, state_version, job_state_running(), to_state,
                                       reason, detail),
           extraction_append_outbox_event(
               event_id, id, tenant_id, event_type,
               jsonb_build_object('job_id', id::text, 'event_version', 1, 'state_version', state_version))
      FROM won
)
, released AS (
    SELECT extraction_release_admissions(array_agg(tenant_id ORDER BY tenant_id), array_agg(jobs ORDER BY tenant_id),
                                         array_agg(bytes ORDER BY tenant_id), array_agg(reserved ORDER BY tenant_id),
                                         array_agg(spend ORDER BY tenant_id))
      FROM (SELECT tenant_id, count(*) AS jobs, sum(byte_size)::bigint AS bytes,
                   sum(estimated_tokens)::bigint AS reserved, sum(spend_micros)::bigint AS spend
              FROM won GROUP BY tenant_id) AS per_tenant
)
, result AS (
    INSERT INTO extraction_results (job_id, output, validation, policy_version, attempt_number, fence,
                                    provider, model, created_at)
    SELECT id, output, validation, policy_version, attempt, fence, provider, model, now()
      FROM won
)
-- The row's verdict; the seconds since acceptance feed the accept-to-terminal histogram of
-- /metrics. The counts read recorded and released to the end, which runs them.
SELECT done.job,
       CASE WHEN moved.id IS NOT NULL THEN 'won'
            WHEN done.job IN (SELECT job FROM judged_with_old_policy) THEN 'policy_changed'
            ELSE 'stale' END,
       extract(epoch FROM now() - moved.created_at)::float8
  FROM done LEFT JOIN moved ON moved.id = done.job
 WHERE (SELECT count(*) FROM recorded) >= 0 AND (SELECT count(*) FROM released) >= 0


-- name: end_attempt
-- What an attempt's ledger row learns when it ends (the completion writes its own, with the
-- stale verdict).
UPDATE extraction_attempts
   SET ended_at = coalesce(ended_at, now()), outcome = %(outcome)s, provider = %(provider)s,
       model = %(model)s, provider_request_id = %(request_id)s, input_tokens = %(input_tokens)s,
       output_tokens = %(output_tokens)s, latency_ms = %(latency_ms)s, http_status = %(http_status)s,
       retry_after_seconds = %(retry_after)s, error_detail = %(error)s
 WHERE job_id = %(job)s AND fence = %(fence)s


-- name: schedule_retry
-- RTY-2: RUNNING -> RETRY_SCHEDULED under the fence, unless the next whole attempt (the delay
-- plus ``budget``: the attempt timeout and the commit margin) would end past the deadline.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_retry_scheduled(), state_version = state_version + 1, updated_at = now(),
           lease_owner = '', lease_until = NULL, error_class = %(error_class)s, error_detail = %(error_detail)s,
           available_at = now() + make_interval(secs => %(delay)s)
     WHERE id = %(job_id)s AND state = job_state_running() AND fence = %(fence)s
       AND now() + make_interval(secs => %(delay)s + %(budget)s) <= deadline_at
    RETURNING tenant_id, state_version, fence
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_running(),
                                       job_state_retry_scheduled(), %(reason)s, %(detail)s::jsonb)
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: fail_running
-- RUNNING -> FAILED_TERMINAL under the fence, with a dead-letter event (DLQ-2). The job
-- leaves the pending states: its admission share comes back, at what its attempts used
-- (the ledger was written before this statement).
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_failed_terminal(), state_version = state_version + 1, updated_at = now(),
           lease_owner = '', lease_until = NULL, error_class = %(error_class)s, error_detail = %(error_detail)s
     WHERE id = %(job_id)s AND state = job_state_running() AND fence = %(fence)s
    RETURNING tenant_id, state_version, fence, byte_size, estimated_tokens, created_at
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_running(),
                                       job_state_failed_terminal(), %(reason)s, %(detail)s::jsonb),
           extraction_release_admission(
               tenant_id, byte_size, estimated_tokens,
               (SELECT coalesce(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), 0)
                  FROM extraction_attempts WHERE job_id = %(job_id)s),
               %(price)s),
           -- A reference, never the invoice (DLQ-1): the job row holds the history.
           extraction_append_outbox_event(
               %(event_id)s, %(job_id)s, tenant_id, %(event_type)s::text,
               jsonb_build_object('job_id', %(job_id)s::text, 'event_version', 1, 'state_version', state_version,
                                  'error_class', %(error_class)s::text, 'attempt', %(attempt)s::int))
      FROM moved
)
-- The seconds since acceptance: the accept-to-terminal histogram of /metrics.
SELECT moved.tenant_id, moved.state_version, moved.fence, extract(epoch FROM now() - moved.created_at)::float8
  FROM moved, recorded


-- name: hand_back
-- RUNNING -> READY under the fence, unspent: the attempt counter restored, the fence kept.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_ready(), state_version = state_version + 1, updated_at = now(),
           attempt = attempt - 1, lease_owner = '', lease_until = NULL,
           available_at = now() + make_interval(secs => %(delay)s)
     WHERE id = %(job_id)s AND state = job_state_running() AND fence = %(fence)s
    RETURNING tenant_id, state_version, fence
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_running(), job_state_ready(),
                                       %(reason)s, %(detail)s::jsonb)
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: hand_back_interrupted
-- RUNNING -> READY at once with fence+1: the worker's shutdown abandoned the model call. The new
-- fence refuses whatever the abandoned call's process might still try to complete; the attempt
-- counter is restored, since an eviction is not the job's failure.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_ready(), state_version = state_version + 1, updated_at = now(),
           attempt = attempt - 1, fence = fence + 1, lease_owner = '', lease_until = NULL,
           available_at = now()
     WHERE id = %(job_id)s AND state = job_state_running() AND fence = %(fence)s
    RETURNING tenant_id, state_version, fence
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_running(), job_state_ready(),
                                       %(reason)s, %(detail)s::jsonb)
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: approve_review
-- VAL-2: REVIEW_REQUIRED -> SUCCEEDED, guarded on the state_version the reviewer saw, with an
-- extraction.completed.v1 event so the ERP gets the approved output.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_succeeded(), state_version = state_version + 1, updated_at = now()
     WHERE id = %(job_id)s AND state = job_state_review_required() AND state_version = %(seen)s
    RETURNING tenant_id, state_version, fence
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_review_required(),
                                       job_state_succeeded(), %(reason)s, %(detail)s::jsonb),
           extraction_append_outbox_event(
               %(event_id)s, %(job_id)s, tenant_id, %(event_type)s::text,
               jsonb_build_object('job_id', %(job_id)s::text, 'event_version', 1, 'state_version', state_version))
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: reject_review
-- VAL-2: REVIEW_REQUIRED -> FAILED_TERMINAL, guarded on the state_version the reviewer saw,
-- with a dead-letter event. REVIEW_REQUIRED holds no admission share: nothing to give back.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_failed_terminal(), state_version = state_version + 1, updated_at = now(),
           error_class = 'review_rejected', error_detail = %(comment)s
     WHERE id = %(job_id)s AND state = job_state_review_required() AND state_version = %(seen)s
    RETURNING tenant_id, state_version, fence
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_review_required(),
                                       job_state_failed_terminal(), %(reason)s, %(detail)s::jsonb),
           extraction_append_outbox_event(
               %(event_id)s, %(job_id)s, tenant_id, %(event_type)s::text,
               jsonb_build_object('job_id', %(job_id)s::text, 'event_version', 1, 'state_version', state_version,
                                  'error_class', 'review_rejected', 'attempt', 0))
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: record_review_decision
INSERT INTO review_decisions (job_id, reviewer_id, decision, state_version, before, after, validation, comment,
                              created_at)
VALUES (%(job_id)s, %(reviewer_id)s, %(decision)s, %(seen)s, %(before)s, %(after)s, %(validation)s, %(comment)s,
        now())


-- name: store_approved_output
-- The approved output was re-validated: it carries the verdict and policy it passed.
UPDATE extraction_results
   SET output = %(output)s, validation = %(validation)s, policy_version = coalesce(%(policy_version)s, policy_version)
 WHERE job_id = %(job_id)s


-- name: expired_leases
-- EXE-5: RUNNING jobs whose lease has passed, locked for the reaper; no_time_left: a whole
-- attempt (``budget``) would no longer end before the deadline.
SELECT id, fence, attempt, max_attempts, model_policy,
       now() + make_interval(secs => %(budget)s) > deadline_at AS no_time_left
  FROM extraction_jobs
 WHERE state = job_state_running() AND lease_until < now()
 ORDER BY id
 FOR UPDATE SKIP LOCKED
 LIMIT %(limit)s


-- name: reap_for_retry
-- EXE-5: an expired lease -> RETRY_SCHEDULED with fence+1 (the dead worker's completion will
-- find a newer fence) and the next attempt time persisted. The attempt counter is kept.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_retry_scheduled(), state_version = state_version + 1, updated_at = now(),
           fence = fence + 1, lease_owner = '', lease_until = NULL, error_class = 'lease_expired',
           error_detail = '', available_at = now() + make_interval(secs => %(delay)s)
     WHERE id = %(job_id)s AND state = job_state_running() AND fence = %(fence)s
    RETURNING tenant_id, state_version, fence
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_running(),
                                       job_state_retry_scheduled(), %(reason)s, %(detail)s::jsonb)
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: reap_failed
-- EXE-5: an expired lease with the retry budget or the deadline spent -> FAILED_TERMINAL with
-- fence+1 and a dead-letter event; the admission share comes back.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_failed_terminal(), state_version = state_version + 1, updated_at = now(),
           fence = fence + 1, lease_owner = '', lease_until = NULL, error_class = %(error_class)s,
           error_detail = 'lease expired'
     WHERE id = %(job_id)s AND state = job_state_running() AND fence = %(fence)s
    RETURNING tenant_id, state_version, fence, byte_size, estimated_tokens, created_at
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_running(),
                                       job_state_failed_terminal(), %(reason)s, %(detail)s::jsonb),
           extraction_release_admission(
               tenant_id, byte_size, estimated_tokens,
               (SELECT coalesce(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), 0)
                  FROM extraction_attempts WHERE job_id = %(job_id)s),
               %(price)s),
           extraction_append_outbox_event(
               %(event_id)s, %(job_id)s, tenant_id, %(event_type)s::text,
               jsonb_build_object('job_id', %(job_id)s::text, 'event_version', 1, 'state_version', state_version,
                                  'error_class', %(error_class)s::text, 'attempt', %(attempt)s::int))
      FROM moved
)
-- The seconds since acceptance: the accept-to-terminal histogram of /metrics.
SELECT moved.tenant_id, moved.state_version, moved.fence, extract(epoch FROM now() - moved.created_at)::float8
  FROM moved, recorded


-- name: expired_waiting_jobs
-- Jobs still waiting (ACCEPTED, READY, RETRY_SCHEDULED) at their deadline, locked
-- (job_pending_deadline_idx). RUNNING jobs are left to their worker and the reaper.
SELECT id, state, attempt, model_policy FROM extraction_jobs
 WHERE state IN (job_state_accepted(), job_state_ready(), job_state_retry_scheduled()) AND deadline_at <= now()
 ORDER BY deadline_at
 FOR UPDATE SKIP LOCKED
 LIMIT %(limit)s


-- name: expire_deadline
-- A waiting job (``from_state``, as locked by expired_waiting_jobs) -> FAILED_TERMINAL with a
-- dead-letter event; the admission share comes back.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_failed_terminal(), state_version = state_version + 1, updated_at = now(),
           error_class = 'deadline_exceeded', error_detail = 'deadline passed before completion'
     WHERE id = %(job_id)s AND state = %(from_state)s
    RETURNING tenant_id, state_version, fence, byte_size, estimated_tokens, created_at
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, %(from_state)s,
                                       job_state_failed_terminal(), %(reason)s, %(detail)s::jsonb),
           extraction_release_admission(
               tenant_id, byte_size, estimated_tokens,
               (SELECT coalesce(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), 0)
                  FROM extraction_attempts WHERE job_id = %(job_id)s),
               %(price)s),
           extraction_append_outbox_event(
               %(event_id)s, %(job_id)s, tenant_id, %(event_type)s::text,
               jsonb_build_object('job_id', %(job_id)s::text, 'event_version', 1, 'state_version', state_version,
                                  'error_class', 'deadline_exceeded', 'attempt', %(attempt)s::int))
      FROM moved
)
-- The seconds since acceptance: the accept-to-terminal histogram of /metrics.
SELECT moved.tenant_id, moved.state_version, moved.fence, extract(epoch FROM now() - moved.created_at)::float8
  FROM moved, recorded


-- name: lost_ingress_jobs
-- BRK-4: ACCEPTED jobs whose requested event was published long ago and never taken in.
SELECT j.id FROM extraction_jobs j
  JOIN outbox_events o ON o.job_id = j.id AND o.event_type = %(requested_event)s
 WHERE j.state = job_state_accepted()
   AND o.published_at < now() - make_interval(secs => %(recovery_seconds)s)
 ORDER BY j.id
 FOR UPDATE OF j SKIP LOCKED
 LIMIT %(limit)s


-- name: recover_ingress
-- BRK-4: ACCEPTED -> READY without the ingress message; a late message is then a no-op.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_ready(), state_version = state_version + 1, updated_at = now()
     WHERE id = %(job_id)s AND state = job_state_accepted()
    RETURNING tenant_id, state_version, fence
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, job_state_accepted(),
                                       job_state_ready(), %(reason)s, %(detail)s::jsonb)
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: count_eligible_jobs
-- Runnable jobs whose time has come, counted up to ``cap`` (bounded work per sweep).
SELECT count(*) FROM (
    SELECT 1 FROM extraction_jobs
     WHERE state IN (job_state_ready(), job_state_retry_scheduled()) AND available_at <= now()
       AND deadline_at > now()
     LIMIT %(cap)s) AS eligible


-- name: locked_jobs_for_operator
-- A bulk action's batch, locked in id order (two actions over overlapping sets cannot
-- deadlock) for the length of the batch's transaction: the state read here is the state each
-- guarded move below expects. A worker's completion waits for the batch to commit, then finds
-- the move made (and the fence taken away, for a cancelled RUNNING job).
SELECT id, state, fence, attempt, model_policy FROM extraction_jobs
 WHERE tenant_id = %(tenant)s AND id = ANY(%(ids)s)
 ORDER BY id
 FOR UPDATE


-- name: cancel_job
-- An operator's cancel: a waiting or RUNNING job (``from_state``, as locked) -> FAILED_TERMINAL
-- with a dead-letter event (error_class 'cancelled'); the admission share comes back. A RUNNING
-- job loses its lease and its fence moves on, so the worker's completion (guarded by the fence)
-- is refused and recorded as a stale completion: nothing it returns is written. Its call's
-- tokens are not known yet and are not charged to the spend; the ledger still records them.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_failed_terminal(), state_version = state_version + 1, updated_at = now(),
           fence = CASE WHEN state = job_state_running() THEN fence + 1 ELSE fence END,
           lease_owner = '', lease_until = NULL, error_class = 'cancelled', error_detail = %(error_detail)s
     WHERE id = %(job_id)s AND state = %(from_state)s AND fence = %(fence)s
    RETURNING tenant_id, state_version, fence, byte_size, estimated_tokens
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, %(from_state)s,
                                       job_state_failed_terminal(), %(reason)s, %(detail)s::jsonb),
           extraction_release_admission(
               tenant_id, byte_size, estimated_tokens,
               (SELECT coalesce(sum(coalesce(input_tokens, 0) + coalesce(output_tokens, 0)), 0)
                  FROM extraction_attempts WHERE job_id = %(job_id)s),
               %(price)s),
           extraction_append_outbox_event(
               %(event_id)s, %(job_id)s, tenant_id, %(event_type)s::text,
               jsonb_build_object('job_id', %(job_id)s::text, 'event_version', 1, 'state_version', state_version,
                                  'error_class', 'cancelled', 'attempt', %(attempt)s::int))
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: rerun_job
-- An operator's re-run: a FAILED_TERMINAL or REVIEW_REQUIRED job (``from_state``, as locked)
-- -> READY under the normal budget. The tenant's admission share is charged again exactly as
-- acceptance charges it (BP-1): no row in ``charged`` when a limit would be passed, and then
-- nothing moves. The job gets ``attempts`` more attempts and its original deadline span from
-- now; its live result, if any, moves to extraction_superseded_results (the re-run's
-- completion writes a new one). Data-modifying CTEs run whether or not they are read; each
-- one after ``charged`` is guarded by the row before it.
WITH charged AS (
    UPDATE accounts_tenantusage AS u
       SET pending_jobs = u.pending_jobs + 1,
           pending_bytes = u.pending_bytes + j.byte_size,
           reserved_tokens = u.reserved_tokens + j.estimated_tokens,
           spent_today_micros = tenant_daily_spend(u.spend_day, u.spent_today_micros, 0, 0),
           spend_day = current_date
      FROM accounts_tenant AS t, extraction_jobs AS j
     WHERE j.id = %(job_id)s AND j.state = %(from_state)s AND j.fence = %(fence)s
       AND t.id = j.tenant_id AND u.tenant_id = t.id
       AND u.pending_jobs + 1 <= t.max_pending_jobs
       AND u.pending_bytes + j.byte_size <= t.max_pending_bytes
       AND u.reserved_tokens + j.estimated_tokens <= t.max_reserved_tokens
       AND tenant_daily_spend(u.spend_day, u.spent_today_micros, u.reserved_tokens + j.estimated_tokens, %(price)s)
           <= t.daily_spend_limit_micros
    RETURNING j.id
)
, moved AS (
    UPDATE extraction_jobs
       SET state = job_state_ready(), state_version = state_version + 1, updated_at = now(),
           max_attempts = attempt + %(attempts)s, available_at = now(),
           deadline_at = now() + (deadline_at - created_at), error_class = '', error_detail = ''
     WHERE id = %(job_id)s AND state = %(from_state)s AND fence = %(fence)s AND EXISTS (SELECT FROM charged)
    RETURNING tenant_id, state_version, fence
)
, superseded AS (
    DELETE FROM extraction_results WHERE job_id = %(job_id)s AND EXISTS (SELECT FROM moved)
    RETURNING job_id, output, validation, policy_version, attempt_number, fence, provider, model, created_at
)
, archived AS (
    INSERT INTO extraction_superseded_results (job_id, output, validation, policy_version, attempt_number, fence,
                                               provider, model, created_at, superseded_at, superseded_by_id)
    SELECT job_id, output, validation, policy_version, attempt_number, fence, provider, model, created_at, now(),
           %(action_id)s
      FROM superseded
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, tenant_id, state_version, %(from_state)s,
                                       job_state_ready(), %(reason)s, %(detail)s::jsonb)
      FROM moved
)
SELECT moved.tenant_id, moved.state_version, moved.fence FROM moved, recorded


-- name: split_job
-- RUNNING -> SPLIT under the fence: the document holds several invoices (issue #27,
-- extraction/execution/splitting.py). In the one statement that moves the parent, as one
-- commit, so a crash leaves either the parent RUNNING (its lease expires, another attempt
-- splits it again) or the parent SPLIT with every part:
--   parts     one ACCEPTED job per part, on the parent's document, with its pages, the parent's
--             schema, policy, options, priority and deadline, and the document's bytes shared by
--             pages; its key names the parent and the first page.
--   accepted  each part's extraction.requested.v1 outbox event and first job event, as
--             acceptance writes them (the relay hands them to ingress like any accepted job).
--   charged   the parts' admission shares, taken without the tenant's limits (the parent was
--             admitted, and refusing a part here would lose an invoice the tenant sent), and
--             the parent's given back.
--   recorded  the parent's event and its extraction.split.v1 outbox event naming the parts.
WITH moved AS (
    UPDATE extraction_jobs
       SET state = job_state_split(), state_version = state_version + 1, updated_at = now(),
           lease_owner = '', lease_until = NULL
     WHERE id = %(job_id)s AND state = job_state_running() AND fence = %(fence)s
    RETURNING id, tenant_id, state_version, fence, document_id, document_version, request_hash, schema,
              model_policy, options, priority_class, max_attempts, deadline_at, estimated_tokens, byte_size,
              trace_context, created_at
)
, part AS (
    SELECT * FROM unnest(%(part_ids)s::uuid[], %(firsts)s::int[], %(lasts)s::int[], %(event_ids)s::uuid[])
                  AS p(id, first_page, last_page, event_id)
)
, parts AS (
    INSERT INTO extraction_jobs (
        id, tenant_id, document_id, document_version, idempotency_key, request_hash,
        schema, model_policy, options, priority_class, state, state_version, attempt,
        max_attempts, fence, lease_owner, available_at, deadline_at, estimated_tokens,
        byte_size, error_class, error_detail, trace_context, parent_id, first_page, last_page,
        created_at, updated_at)
    SELECT part.id, moved.tenant_id, moved.document_id, moved.document_version,
           'part:' || moved.id::text || ':' || part.first_page::text, moved.request_hash, moved.schema,
           moved.model_policy, moved.options, moved.priority_class, job_state_accepted(), 1, 0,
           moved.max_attempts, 0, '', now(), moved.deadline_at, moved.estimated_tokens,
           -- The document's bytes shared by pages: the shares of pages 1..n telescope to its size.
           moved.byte_size * part.last_page / %(page_count)s - moved.byte_size * (part.first_page - 1) / %(page_count)s,
           '', '',
           moved.trace_context, moved.id, part.first_page, part.last_page, now(), now()
      FROM moved, part
    RETURNING id, tenant_id, byte_size
)
, accepted AS (
    SELECT extraction_append_outbox_event(part.event_id, parts.id, parts.tenant_id, %(requested)s::text,
                                          jsonb_build_object('job_id', parts.id::text, 'event_version', 1,
                                                             'state_version', 1)),
           extraction_append_job_event(parts.id, parts.tenant_id, 1, '', job_state_accepted(), 'split_from',
                                       jsonb_build_object('parent', %(job_id)s::text))
      FROM parts JOIN part ON part.id = parts.id
)
, charged AS (
    -- One update of the tenant's usage row: the parts' shares in, the parent's out (a row
    -- updated twice in one statement keeps one of the two). No model was called for the
    -- parent: it spent nothing. The parts' bytes sum to the parent's.
    UPDATE accounts_tenantusage AS u
       SET pending_jobs = u.pending_jobs + (SELECT count(*) FROM parts) - 1,
           pending_bytes = u.pending_bytes + (SELECT coalesce(sum(byte_size), 0) FROM parts) - moved.byte_size,
           reserved_tokens = u.reserved_tokens + moved.estimated_tokens * ((SELECT count(*) FROM parts) - 1)
      FROM moved
     WHERE u.tenant_id = moved.tenant_id
    RETURNING u.tenant_id
)
, recorded AS (
    SELECT extraction_append_job_event(%(job_id)s, moved.tenant_id, moved.state_version, job_state_running(),
                                       job_state_split(), 'split', %(detail)s::jsonb),
           extraction_append_outbox_event(
               %(event_id)s, %(job_id)s, moved.tenant_id, %(event_type)s::text,
               jsonb_build_object('job_id', %(job_id)s::text, 'event_version', 1,
                                  'state_version', moved.state_version, 'parts', %(parts)s::jsonb))
      FROM moved
)
-- The seconds since acceptance: the accept-to-terminal histogram of /metrics.
SELECT moved.tenant_id, moved.state_version, moved.fence, extract(epoch FROM now() - moved.created_at)::float8
  FROM moved
 WHERE (SELECT count(*) FROM accepted) = (SELECT count(*) FROM parts)
   AND (SELECT count(*) FROM charged) = 1 AND (SELECT count(*) FROM recorded) = 1

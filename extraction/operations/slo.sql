-- The SLO report's reads (extraction/operations/slo.py runs these, in one read-only
-- transaction). create_window_jobs defines the window once, as the temporary table
-- slo_window_jobs; every other statement, and the sections other apps add
-- (settings.SLO_REPORT_SECTIONS), reads that table. Every time comes from the rows themselves
-- (job_events, review_decisions, outbox_events, the attempt ledger) and "now" is the
-- transaction's now(), so the statements agree with each other.


-- name: drop_window_jobs
-- Before and after the report: ON COMMIT DROP does not fire when the report runs inside an
-- outer transaction (a savepoint), where a second report would find the table still there.
DROP TABLE IF EXISTS pg_temp.slo_window_jobs


-- name: create_window_jobs
-- The jobs ACCEPTED in [since, until), of one tenant or all, with what the report asks of
-- each: its document class (intake's media type and the job's schema) and whether the SLO
-- covers it, the tenant's completion target, and the moments of its history. Each "first"
-- moment is the first time it happened: an operator's re-run repeats a state, and the SLO
-- judges the job's first way through. A bundle counts as the invoices it held: a SPLIT job is
-- not in the window, each of its parts is, accepted when the bundle was (its client's clock
-- started then) and in the window the bundle's acceptance falls in.
--   succeeded_at       first transition to SUCCEEDED (a worker's completion or an approval)
--   decided_at         the first reviewer decision (review_decisions), with its verdict
--   review_entered_at  first transition to REVIEW_REQUIRED
--   taken_in_at        first transition to READY (ingress took the requested event in)
--   state_entered_at   when the job entered the state it is in now (its latest event)
CREATE TEMPORARY TABLE slo_window_jobs ON COMMIT DROP AS
SELECT j.id AS job_id, j.tenant_id, j.state, j.error_class, j.model_policy, j.schema, d.content_type,
       (d.content_type = ANY(%(content_types)s) AND j.schema = ANY(%(schemas)s)) AS supported,
       coalesce(p.created_at, j.created_at) AS accepted_at,
       j.created_at AS created_at,  -- a part's own: when the split wrote it
       t.completion_target_seconds,
       coalesce(p.created_at, j.created_at) + make_interval(secs => t.completion_target_seconds) AS due_at,
       (SELECT min(e.created_at) FROM job_events e
         WHERE e.job_id = j.id AND e.to_state = job_state_succeeded()) AS succeeded_at,
       rd.created_at AS decided_at,
       rd.decision,
       (SELECT min(e.created_at) FROM job_events e
         WHERE e.job_id = j.id AND e.to_state = job_state_review_required()) AS review_entered_at,
       (SELECT min(e.created_at) FROM job_events e
         WHERE e.job_id = j.id AND e.to_state = job_state_ready()) AS taken_in_at,
       (SELECT e.created_at FROM job_events e
         WHERE e.job_id = j.id AND e.state_version = j.state_version) AS state_entered_at
  FROM extraction_jobs j
  JOIN accounts_tenant t ON t.id = j.tenant_id
  JOIN documents d ON d.id = j.document_id
  LEFT JOIN extraction_jobs p ON p.id = j.parent_id
  LEFT JOIN LATERAL (
      SELECT r.created_at, r.decision FROM review_decisions r
       WHERE r.job_id = j.id
       ORDER BY r.created_at, r.id
       LIMIT 1
  ) AS rd ON true
 WHERE coalesce(p.created_at, j.created_at) >= %(since)s AND coalesce(p.created_at, j.created_at) < %(until)s
   AND j.state <> job_state_split()
   AND (%(tenant)s::uuid IS NULL OR j.tenant_id = %(tenant)s)


-- name: document_classes
-- The window's jobs by document class; the unsupported ones are reported apart.
SELECT supported, content_type, schema, count(*)
  FROM slo_window_jobs
 GROUP BY supported, content_type, schema
 ORDER BY supported DESC, count(*) DESC, content_type, schema


-- name: completion_targets
-- The completion targets of the window's tenants (one, for a tenant's report).
SELECT DISTINCT completion_target_seconds FROM slo_window_jobs WHERE supported ORDER BY 1


-- name: completion
-- OPS-4: each supported job in exactly one outcome. Completed = SUCCEEDED or decided by a
-- reviewer (the earlier of the two); a job neither completed nor FAILED_TERMINAL is open,
-- whether it still waits for a worker or for a reviewer. Failed and open jobs are never good.
WITH w AS (
    SELECT *, least(succeeded_at, decided_at) AS completed_at FROM slo_window_jobs WHERE supported
)
SELECT count(*),
       count(*) FILTER (WHERE completed_at <= due_at),
       count(*) FILTER (WHERE completed_at > due_at),
       count(*) FILTER (WHERE completed_at IS NULL AND state = job_state_failed_terminal()
                          AND state_entered_at <= due_at),
       count(*) FILTER (WHERE completed_at IS NULL AND state = job_state_failed_terminal()
                          AND state_entered_at > due_at),
       count(*) FILTER (WHERE completed_at IS NULL AND state = job_state_review_required() AND now() <= due_at),
       count(*) FILTER (WHERE completed_at IS NULL AND state = job_state_review_required() AND now() > due_at),
       count(*) FILTER (WHERE completed_at IS NULL
                          AND state NOT IN (job_state_failed_terminal(), job_state_review_required())
                          AND now() <= due_at),
       count(*) FILTER (WHERE completed_at IS NULL
                          AND state NOT IN (job_state_failed_terminal(), job_state_review_required())
                          AND now() > due_at)
  FROM w


-- name: late_jobs
-- The late jobs' ids, at most ``examples`` of each kind, oldest first: "terminal" ended past
-- the target (completed or failed), "unfinished" is past the target and not ended yet.
WITH w AS (
    SELECT *, least(succeeded_at, decided_at) AS completed_at FROM slo_window_jobs WHERE supported
)
, late AS (
    SELECT job_id, accepted_at,
           CASE WHEN completed_at IS NOT NULL OR state = job_state_failed_terminal() THEN 'terminal'
                ELSE 'unfinished' END AS kind
      FROM w
     WHERE completed_at > due_at
        OR (completed_at IS NULL AND state = job_state_failed_terminal() AND state_entered_at > due_at)
        OR (completed_at IS NULL AND state <> job_state_failed_terminal() AND now() > due_at)
)
SELECT kind, count(*), (array_agg(job_id::text ORDER BY accepted_at, job_id))[1:%(examples)s]
  FROM late
 GROUP BY kind


-- name: failures_by_reason
-- Terminal failures the system decided (FAILED_TERMINAL with no reviewer's decision: a
-- reviewer's rejection is a completed decision), by the job's error class.
SELECT error_class, count(*)
  FROM slo_window_jobs
 WHERE supported AND state = job_state_failed_terminal() AND decided_at IS NULL
 GROUP BY error_class
 ORDER BY count(*) DESC, error_class


-- name: review
-- REVIEW_REQUIRED's own SLO: jobs that entered review, their first decision and its verdict,
-- turnaround (entered review -> decided) against ``target`` seconds, its percentiles, and the
-- jobs still waiting for a reviewer.
WITH r AS (
    SELECT decided_at, decision, review_entered_at,
           extract(epoch FROM decided_at - review_entered_at)::float8 AS turnaround
      FROM slo_window_jobs
     WHERE supported AND review_entered_at IS NOT NULL
)
SELECT count(*),
       count(decided_at),
       count(*) FILTER (WHERE decision = %(approved)s),
       count(*) FILTER (WHERE decision = %(rejected)s),
       count(*) FILTER (WHERE turnaround <= %(target)s),
       count(*) FILTER (WHERE decided_at IS NULL AND now() <= review_entered_at + make_interval(secs => %(target)s)),
       count(*) FILTER (WHERE decided_at IS NULL AND now() > review_entered_at + make_interval(secs => %(target)s)),
       percentile_cont(%(fractions)s::float8[]) WITHIN GROUP (ORDER BY turnaround)
           FILTER (WHERE turnaround IS NOT NULL)
  FROM r


-- name: accept_latency
-- What the database records of acceptance: the job row and its requested event are written
-- in one transaction at the same now(), so the time the request took to be answered 202 is
-- not here. Recorded: accepted -> the relay marked the requested event published, and
-- accepted -> ingress took the event in (the job's first READY); a bundle's part from when the
-- split wrote it and its requested event.
SELECT count(o.published_at),
       count(*) FILTER (WHERE o.published_at IS NULL),
       percentile_cont(%(fractions)s::float8[])
           WITHIN GROUP (ORDER BY extract(epoch FROM o.published_at - w.created_at)::float8)
           FILTER (WHERE o.published_at IS NOT NULL),
       count(w.taken_in_at),
       percentile_cont(%(fractions)s::float8[])
           WITHIN GROUP (ORDER BY extract(epoch FROM w.taken_in_at - w.created_at)::float8)
           FILTER (WHERE w.taken_in_at IS NOT NULL)
  FROM slo_window_jobs w
  LEFT JOIN outbox_events o ON o.job_id = w.job_id AND o.event_type = %(requested_event)s
 WHERE w.supported


-- name: model_calls
-- CAP-4: paid model calls per job from the attempt ledger, and what they cost from the usage
-- the provider reported. A paid call is an attempt that reached a provider that bills
-- (``unpaid``: the e-invoice reader, the built-in rules) and was not handed back unspent
-- (``unspent``). A reaped attempt records no provider: for a job of a paying policy it may
-- have been paid (``possibly_paid``: the worker died after the call). Cost is tokens times the
-- job's policy price (``policies``/``prices``, micro-units per 1,000 tokens, as admission
-- charges the spend); a paid call without reported usage costs what is unknown, and is counted.
WITH prices AS (
    SELECT * FROM unnest(%(policies)s::text[], %(prices)s::bigint[]) AS p(model_policy, price_per_1k_tokens_micros)
)
, per_job AS (
    SELECT w.job_id, w.model_policy,
           count(a.id) FILTER (WHERE a.provider <> '' AND a.provider <> ALL(%(unpaid)s)
                                 AND a.outcome <> ALL(%(unspent)s)) AS paid_calls,
           count(a.id) FILTER (WHERE a.provider = '' AND a.outcome = %(lease_lost)s
                                 AND w.model_policy = ANY(%(paying_policies)s)) AS possibly_paid,
           count(a.id) FILTER (WHERE a.provider <> '' AND a.provider <> ALL(%(unpaid)s)
                                 AND a.outcome <> ALL(%(unspent)s)
                                 AND a.input_tokens IS NULL AND a.output_tokens IS NULL) AS without_usage,
           coalesce(sum(a.input_tokens) FILTER (WHERE a.provider <> '' AND a.provider <> ALL(%(unpaid)s)
                                                  AND a.outcome <> ALL(%(unspent)s)), 0) AS input_tokens,
           coalesce(sum(a.output_tokens) FILTER (WHERE a.provider <> '' AND a.provider <> ALL(%(unpaid)s)
                                                   AND a.outcome <> ALL(%(unspent)s)), 0) AS output_tokens
      FROM slo_window_jobs w
      LEFT JOIN extraction_attempts a ON a.job_id = w.job_id
     WHERE w.supported
     GROUP BY w.job_id, w.model_policy
)
SELECT count(*),
       coalesce(sum(paid_calls), 0),
       count(*) FILTER (WHERE paid_calls > 0),
       coalesce(max(paid_calls), 0),
       percentile_cont(%(fractions)s::float8[]) WITHIN GROUP (ORDER BY paid_calls),
       coalesce(sum(possibly_paid), 0),
       coalesce(sum(without_usage), 0),
       coalesce(sum(input_tokens), 0),
       coalesce(sum(output_tokens), 0),
       coalesce(sum((input_tokens + output_tokens) * p.price_per_1k_tokens_micros / 1000.0), 0)::float8,
       coalesce(array_agg(DISTINCT per_job.model_policy) FILTER (WHERE p.model_policy IS NULL AND paid_calls > 0),
                '{}')
  FROM per_job
  LEFT JOIN prices p ON p.model_policy = per_job.model_policy


-- name: reviewer_throughput
-- Reviewers' work in the window: the review decisions *made* in [since, until) (not only on
-- the window's jobs: a reviewer's hour is spent on whatever the queue holds), of one tenant's
-- jobs or all, per reviewer and in total (the row whose reviewer_id GROUPING is 1).
-- A decision's handling time runs from when the reviewer could have started on it to the
-- decision: the later of the job entering the reviewed state (the job event of the
-- decision's state_version) and the same reviewer's previous decision, on any job. The data
-- records no "opened the job", so a first decision after a break counts the break while the
-- job waited; the median is the figure to read. Fields corrected: the approved output's
-- corrected fields (validation.review.corrected_fields); a rejection corrects nothing.
WITH d AS (
    SELECT r.reviewer_id, r.created_at,
           greatest(entered.created_at, previous.created_at) AS started_at,
           CASE WHEN r.decision = %(approved)s
                     AND jsonb_typeof(r.validation -> 'review' -> 'corrected_fields') = 'array'
                THEN jsonb_array_length(r.validation -> 'review' -> 'corrected_fields') ELSE 0 END AS corrected
      FROM review_decisions r
      JOIN extraction_jobs j ON j.id = r.job_id
      LEFT JOIN job_events entered ON entered.job_id = r.job_id AND entered.state_version = r.state_version
      LEFT JOIN LATERAL (
          SELECT max(p.created_at) AS created_at FROM review_decisions p
           WHERE p.reviewer_id = r.reviewer_id AND p.created_at < r.created_at
      ) AS previous ON true
     WHERE r.created_at >= %(since)s AND r.created_at < %(until)s
       AND (%(tenant)s::uuid IS NULL OR j.tenant_id = %(tenant)s)
)
SELECT GROUPING(reviewer_id) = 1 AS total, reviewer_id, count(*), coalesce(sum(corrected), 0),
       count(started_at),
       percentile_cont(%(fractions)s::float8[])
           WITHIN GROUP (ORDER BY extract(epoch FROM created_at - started_at)::float8)
           FILTER (WHERE started_at IS NOT NULL)
  FROM d
 GROUP BY GROUPING SETS ((reviewer_id), ())
 ORDER BY total DESC, count(*) DESC, reviewer_id

-- The self-audit's checks and repairs (extraction/operations/audit.py runs these). Each
-- check reads at most ``limit`` rows through an index its query names; each repair is a
-- guarded statement whose row count is what it repaired.


-- name: unpublished_outbox_events
-- OUT-2: events still unpublished ``lag`` seconds after their commit (outbox_unpublished_idx),
-- oldest first, with whether a relay's claim still holds them and why their last publish failed.
SELECT event_id, coalesce(claimed_until > now(), false), last_error
  FROM outbox_events
 WHERE published_at IS NULL AND created_at < now() - make_interval(secs => %(lag)s)
 ORDER BY created_at
 LIMIT %(limit)s


-- name: wake_outbox_relay
-- The relay LISTENs on this channel (the insert trigger of migration 0003 uses it too).
SELECT pg_notify('outbox_events', '')


-- name: running_without_live_lease
-- EXE-5: RUNNING jobs whose lease has passed (job_running_tenant_idx holds the RUNNING rows):
-- their worker is gone or cut off, and only the reaper moves them on.
SELECT id FROM extraction_jobs
 WHERE state = job_state_running() AND lease_until < now()
 ORDER BY lease_until, id
 LIMIT %(limit)s


-- name: live_permit_holders
-- Which of the permits' holders (job, fence) are attempts still running: the job RUNNING
-- under that fence with a live lease. Every other holder's attempt is over, or cannot
-- complete any more (complete_jobs needs the lease).
SELECT h.job_id, h.fence
  FROM unnest(%(jobs)s::uuid[], %(fences)s::bigint[]) AS h(job_id, fence)
  JOIN extraction_jobs j ON j.id = h.job_id
 WHERE j.fence = h.fence AND j.state = job_state_running() AND j.lease_until > now()


-- name: reviews_past_their_slo
-- VAL-2, OPS-4: jobs waiting for a reviewer longer than ``target`` seconds, measured from
-- the event that moved them into REVIEW_REQUIRED (their current state_version), oldest first.
-- Nothing writes a REVIEW_REQUIRED job before its decision, so its updated_at is that moment
-- too: the condition on it is the same test, in a form an index on updated_at could serve.
SELECT j.id
  FROM extraction_jobs j
  JOIN job_events e ON e.job_id = j.id AND e.state_version = j.state_version
 WHERE j.state = job_state_review_required()
   AND j.updated_at < now() - make_interval(secs => %(target)s)
   AND e.created_at < now() - make_interval(secs => %(target)s)
 ORDER BY e.created_at, j.id
 LIMIT %(limit)s

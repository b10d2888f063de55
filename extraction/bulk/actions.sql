-- Operators' bulk actions over jobs (extraction/bulk/actions.py runs these). The moves
-- themselves are the state machine's (extraction/execution/lifecycle.sql: cancel_job,
-- rerun_job); these statements find what a filter matches and keep the audit.


-- name: matching_jobs
-- The tenant's jobs a filter matches, in id order, at most %(limit)s of them. A filter member
-- not given is NULL ("any"). ``reason`` is a failed job's error_class or one of a result's
-- review reasons; ``policy_version`` is the validation policy the live result was judged by.
SELECT j.id FROM extraction_jobs AS j
  LEFT JOIN extraction_results AS r ON r.job_id = j.id
 WHERE j.tenant_id = %(tenant)s
   AND j.state = ANY(%(states)s::text[])
   AND (%(since)s::timestamptz IS NULL OR j.created_at >= %(since)s::timestamptz)
   AND (%(until)s::timestamptz IS NULL OR j.created_at < %(until)s::timestamptz)
   AND (%(reason)s::text IS NULL OR j.error_class = %(reason)s::text
        OR coalesce(r.validation -> 'reasons', '[]'::jsonb) ? %(reason)s::text)
   AND (%(policy_version)s::text IS NULL OR r.policy_version = %(policy_version)s::text)
   AND (%(ids)s::uuid[] IS NULL OR j.id = ANY(%(ids)s::uuid[]))
 ORDER BY j.id
 LIMIT %(limit)s


-- name: start_action
INSERT INTO operator_actions (id, tenant_id, kind, actor, channel, filter, dry_run, status, matched, changed, created_at)
VALUES (%(id)s, %(tenant)s, %(kind)s, %(actor)s, %(channel)s, %(filter)s::jsonb, %(dry_run)s, 'running',
        %(matched)s, 0, now())


-- name: record_targets
-- One row per object the action matched, with what became of it; a repeated batch (the
-- action resumed after a crash) keeps the first verdict.
INSERT INTO operator_action_targets (action_id, object_id, outcome, from_state, created_at)
SELECT %(action)s, object_id, outcome, from_state, now()
  FROM unnest(%(objects)s::uuid[], %(outcomes)s::text[], %(from_states)s::text[]) AS t(object_id, outcome, from_state)
ON CONFLICT (action_id, object_id) DO NOTHING


-- name: finish_action
-- The action's totals come from its targets, so they cannot disagree with them.
UPDATE operator_actions AS a
   SET status = 'completed', finished_at = now(),
       changed = (SELECT count(*) FROM operator_action_targets t WHERE t.action_id = a.id AND t.outcome = 'changed')
 WHERE a.id = %(action)s AND a.status = 'running'

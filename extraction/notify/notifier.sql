-- The notifier process's reads (extraction/notify/listeners.py runs these on its own
-- autocommit connections).


-- name: new_events
-- Events past the notifier's position, plus the ids below it that it still waits for (gaps).
-- Ids are taken at INSERT, not at COMMIT: id 41 can commit after 42 was forwarded, so the
-- missing 41 is remembered and asked for again until it shows up or GAP_HORIZON passes.
-- When the notifier traces (``traced``), each event's job's trace context, by primary key, so
-- its notice joins the job's trace; untraced, the CASE reads nothing.
SELECT id, job_id, tenant_id, state_version, to_state,
       CASE WHEN %(traced)s THEN (SELECT j.trace_context FROM extraction_jobs AS j WHERE j.id = job_events.job_id) END
  FROM job_events
 WHERE id > %(after)s OR id = ANY(%(gaps)s)
 ORDER BY id
 LIMIT %(limit)s


-- name: start_position
-- Where a (re)started notifier begins: just before the events of the last few seconds, so a
-- restart re-sends what it may have missed instead of skipping it (duplicates are harmless).
-- The scan is bounded to the newest rows by the primary key.
SELECT coalesce(min(recent.id) - 1, (SELECT coalesce(max(id), 0) FROM job_events))
  FROM (SELECT id, created_at FROM job_events ORDER BY id DESC LIMIT 1000) AS recent
 WHERE recent.created_at > now() - make_interval(secs => %(seconds)s)


-- name: database_now
-- The revocation window is judged by the database's clock.
SELECT now()


-- name: revocations
-- Credentials revoked since the last look. revoked_at is written with the web process's
-- clock, so the window reaches back a margin and pushes are deduplicated by (kind, id).
SELECT 'token', id, revoked_at FROM accounts_apitoken WHERE revoked_at > %(since)s
UNION ALL
SELECT 'user', user_id, revoked_at FROM accounts_membership WHERE revoked_at > %(since)s


-- name: listen_job_events
LISTEN job_events

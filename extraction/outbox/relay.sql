-- The outbox relay (extraction/outbox/relay.py runs these).


-- name: claim_unpublished
-- OUT-2: mark the previous batch's confirmed rows published and claim up to ``limit``
-- unpublished rows for ``claim`` seconds, in one statement (one autocommit transaction).
-- Parallel relays skip each other's locked rows; a dead relay's claim lapses.
-- When the relay traces (``traced``), each row's trace context: its own, or (an event the
-- lifecycle wrote, with none) its job's, read by primary key. Untraced, the CASE reads nothing.
--
-- Its COMMIT does not wait for the WAL flush (synchronous_commit off for this transaction only,
-- ``relaxed``): what a server crash could lose of it is a claim, which lapses anyway, or a mark,
-- whose row is then published again and deduplicated by its event id (BRK-3, the fan-out's
-- deliveries). Set per transaction, so a pooler's next client never inherits it. The one-time
-- filter reads ``relaxed`` before the first row, whether or not any row is claimed.
WITH relaxed AS (
    SELECT set_config('synchronous_commit', 'off', true) AS synchronous_commit
)
, marked AS (
    UPDATE outbox_events SET published_at = now(), claimed_until = NULL, last_error = ''
     WHERE event_id = ANY(%(confirmed)s) AND published_at IS NULL
)
UPDATE outbox_events AS o
   SET claimed_until = now() + make_interval(secs => %(claim)s),
       publish_attempts = o.publish_attempts + 1
 WHERE o.event_id IN (
       SELECT event_id FROM outbox_events
        WHERE published_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
          -- a row is updated once per statement: never re-claim what is being marked
          AND event_id <> ALL(%(confirmed)s)
        ORDER BY created_at
        FOR UPDATE SKIP LOCKED
        LIMIT %(limit)s)
   AND (SELECT synchronous_commit FROM relaxed) = 'off'
RETURNING o.event_id, o.event_type, o.payload, o.created_at, o.job_id,
          CASE WHEN %(traced)s THEN coalesce(nullif(o.trace_context, '{}'::jsonb),
                                             (SELECT j.trace_context FROM extraction_jobs AS j WHERE j.id = o.job_id))
          END


-- name: mark_published
UPDATE outbox_events SET published_at = now(), claimed_until = NULL, last_error = ''
 WHERE event_id = ANY(%(event_ids)s) AND published_at IS NULL


-- name: release_failed
-- Failed rows stay unpublished; their claim is shortened to the retry delay, each row's error
-- kept. One statement for the batch: a broker outage fails every row of it.
UPDATE outbox_events AS o
   SET claimed_until = now() + make_interval(secs => %(retry_in)s), last_error = failed.error
  FROM unnest(%(event_ids)s::uuid[], %(errors)s::text[]) AS failed (event_id, error)
 WHERE o.event_id = failed.event_id AND o.published_at IS NULL


-- name: publish_lag_seconds
-- Age of the oldest unpublished row (outbox_unpublished_idx): the relay's health in one number.
SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0) FROM outbox_events WHERE published_at IS NULL


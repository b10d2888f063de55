-- The delivery state machine's statements for one attempt: claim, send, record
-- (delivery/dispatch.py runs them). Fan-out's are in fan_out.sql, the durable scheduler's in
-- scheduling.sql, the operators' (redeliver, replay) in replay.sql; what follows holds for all four.
--
-- States, statuses and outcomes are the constants of delivery/functions.sql
-- (delivery_state_pending(), endpoint_status_active(), circuit_state_half_open(),
-- delivery_attempt_in_flight() and so on), as extraction's statements call job_state_ready():
-- folded to constants at planning, so the partial indexes (delivery_due_idx,
-- delivery_endpoint_due_idx, delivery_sending_idx, endpoint_tenant_live_idx) still match, and
-- never spelt as literals.


-- name: lock_due_delivery
-- The claim's first step: the delivery if PENDING and due, locked, with its endpoint and body.
-- SKIP LOCKED: a duplicate hint finds the row taken and walks away instead of waiting.
-- The event's job and, when the sender traces (``traced``), the job's trace context, read by
-- primary key so the attempt's span joins the job's trace; untraced, the CASE reads nothing.
SELECT d.attempts, d.max_attempts, d.is_verification, ev.body, d.tenant_id, d.next_attempt_at,
       e.id, e.url, e.status, e.circuit_state, e.circuit_open_until, e.retry_not_before, now(), ev.job_id,
       CASE WHEN %(traced)s THEN (SELECT j.trace_context FROM extraction_jobs AS j WHERE j.id = ev.job_id) END
  FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
  JOIN webhook_events ev ON ev.event_id = d.event_id
 WHERE d.id = %(id)s AND d.state = delivery_state_pending() AND d.next_attempt_at <= now()
   FOR UPDATE OF d SKIP LOCKED


-- name: hold_delivery
-- Held by its endpoint: unhinted, its due time kept (the longest-waiting delivery goes first).
UPDATE webhook_deliveries SET hinted_at = NULL, updated_at = now()
 WHERE id = %(id)s AND state = delivery_state_pending()


-- name: fail_spent_delivery
UPDATE webhook_deliveries SET state = delivery_state_failed(), updated_at = now()
 WHERE id = %(id)s AND state = delivery_state_pending()


-- name: start_attempt
-- PENDING -> SENDING: attempts + 1 is the attempt's fence; the lease bounds how long it may take.
UPDATE webhook_deliveries
   SET state = delivery_state_sending(), attempts = attempts + 1, lease_until = now() + make_interval(secs => %(lease)s),
       updated_at = now()
 WHERE id = %(id)s AND state = delivery_state_pending()
RETURNING attempts


-- name: insert_attempt
INSERT INTO webhook_delivery_attempts (delivery_id, number, started_at, outcome, response_snippet, error)
VALUES (%(id)s, %(number)s, now(), delivery_attempt_in_flight(), '', '')


-- name: older_pending_delivery
-- Whether the endpoint has a delivery waiting longer than this one (delivery_endpoint_due_idx).
SELECT EXISTS (SELECT 1 FROM webhook_deliveries
                WHERE endpoint_id = %(endpoint)s AND state = delivery_state_pending()
                  AND (next_attempt_at, id) < (%(due_at)s, %(id)s))


-- name: take_probe
-- The half-open probe, guarded on the circuit as this claim saw it: one delivery wins it.
UPDATE webhook_endpoints
   SET circuit_state = circuit_state_half_open(), circuit_open_until = now() + make_interval(secs => %(lease)s)
 WHERE id = %(endpoint)s AND circuit_state = %(circuit)s AND circuit_open_until IS NOT DISTINCT FROM %(open_until)s


-- name: end_attempt
UPDATE webhook_delivery_attempts
   SET ended_at = now(), outcome = %(outcome)s, http_status = %(http_status)s,
       retry_after_seconds = %(retry_after)s, elapsed_ms = %(elapsed_ms)s,
       response_snippet = %(snippet)s, error = %(error)s
 WHERE delivery_id = %(id)s AND number = %(number)s


-- name: record_delivery_outcome
-- Guarded on the attempt's fence: a delivery reaped and claimed again is not this attempt's
-- any more; one reaped and still PENDING is, and a late 2xx still counts.
UPDATE webhook_deliveries
   SET state = %(state)s, lease_until = NULL, hinted_at = NULL, last_status = %(http_status)s,
       last_error = %(error)s, response_snippet = %(snippet)s, updated_at = now(),
       delivered_at = CASE WHEN %(state)s = delivery_state_delivered() THEN now() ELSE delivered_at END,
       next_attempt_at = CASE WHEN %(state)s = delivery_state_pending()
                              THEN now() + make_interval(secs => %(delay)s) ELSE next_attempt_at END
 WHERE id = %(id)s AND attempts = %(attempt)s AND state IN (delivery_state_sending(), delivery_state_pending())

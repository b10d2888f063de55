-- The durable scheduler's delivery statements (delivery/scheduling.py runs them): expired
-- SENDING leases reaped, due deliveries taken for their dispatch hints.
--
-- States and statuses are delivery/functions.sql's constants, as in dispatch.sql.


-- name: reap_expired_leases
-- SENDING rows past their lease (delivery_sending_idx): back to PENDING, due now, or FAILED
-- with the budget spent; the attempt in flight becomes UNKNOWN.
WITH expired AS (
    UPDATE webhook_deliveries
       SET state = CASE WHEN attempts >= max_attempts THEN delivery_state_failed() ELSE delivery_state_pending() END,
           lease_until = NULL, hinted_at = NULL, next_attempt_at = now(), updated_at = now(),
           last_error = 'lease expired before the outcome was recorded'
     WHERE id IN (SELECT id FROM webhook_deliveries
                   WHERE state = delivery_state_sending() AND lease_until < now()
                   ORDER BY lease_until LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
    RETURNING id, attempts)
UPDATE webhook_delivery_attempts AS a
   SET outcome = delivery_attempt_unknown(), ended_at = now(), error = 'lease expired before the outcome was recorded'
  FROM expired
 WHERE a.delivery_id = expired.id AND a.number = expired.attempts AND a.outcome = delivery_attempt_in_flight()


-- name: take_due_deliveries
-- Due deliveries of endpoints that may be sent to now, not hinted in the last rehint
-- seconds, oldest first (delivery_due_idx), marked hinted.
UPDATE webhook_deliveries SET hinted_at = now()
 WHERE id IN (
       SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.state = delivery_state_pending() AND d.next_attempt_at <= now()
          AND (d.hinted_at IS NULL OR d.hinted_at < now() - make_interval(secs => %(rehint)s))
          AND (e.status = endpoint_status_active() OR d.is_verification)
          AND (e.circuit_open_until IS NULL OR e.circuit_open_until <= now())
          AND (e.retry_not_before IS NULL OR e.retry_not_before <= now())
        ORDER BY d.next_attempt_at
        LIMIT %(limit)s
          FOR UPDATE OF d SKIP LOCKED)
RETURNING id

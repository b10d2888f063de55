-- What the autoscaling signal reads of webhook deliveries (delivery/autoscale.py). States and
-- statuses are delivery/functions.sql's constants, as in dispatch.sql.


-- name: delivery_demand
-- 1. Due pending deliveries whose endpoint may be sent to now (take_due_deliveries' filter),
--    up to %(cap)s (delivery_due_idx).
-- 2. Deliveries being sent (delivery_sending_idx).
-- 3. Deliveries created in the last %(window)s seconds, up to %(cap)s per endpoint
--    (delivery_endpoint_created_idx, one range per endpoint).
-- 4. The mean time an attempt took among the newest %(sample)s attempts (a backward scan of
--    the primary key), in milliseconds; NULL with none.
SELECT (SELECT count(*) FROM (
            SELECT 1 FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
             WHERE d.state = delivery_state_pending() AND d.next_attempt_at <= now()
               AND (e.status = endpoint_status_active() OR d.is_verification)
               AND (e.circuit_open_until IS NULL OR e.circuit_open_until <= now())
               AND (e.retry_not_before IS NULL OR e.retry_not_before <= now())
             LIMIT %(cap)s) AS sendable),
       (SELECT count(*) FROM webhook_deliveries WHERE state = delivery_state_sending()),
       (SELECT count(*) FROM webhook_endpoints e, LATERAL (
            SELECT 1 FROM webhook_deliveries d
             WHERE d.endpoint_id = e.id AND d.created_at >= now() - make_interval(secs => %(window)s)
             LIMIT %(cap)s) AS created),
       (SELECT avg(elapsed_ms) FROM (
            SELECT elapsed_ms FROM webhook_delivery_attempts ORDER BY id DESC LIMIT %(sample)s) AS newest
         WHERE elapsed_ms IS NOT NULL)

-- Webhook deliveries as /metrics reports them (delivery/metrics.py runs these; the counts of
-- deliveries through config.metrics.bounded_count). States, statuses and outcomes are
-- delivery/functions.sql's constants (or a parameter where a statement runs for each state),
-- as in dispatch.sql.


-- name: count_deliveries_in_state_bounded
-- PENDING through delivery_due_idx, SENDING through delivery_sending_idx: both partial indexes
-- hold exactly these rows.
SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE state = %(state)s LIMIT %(limit)s) AS bounded


-- name: estimate_deliveries_in_state
EXPLAIN (FORMAT JSON) SELECT 1 FROM webhook_deliveries WHERE state = %(state)s


-- name: count_due_deliveries_bounded
-- Due now: delivery_due_idx (next_attempt_at WHERE pending) serves this count, its estimate
-- and the minimum below.
SELECT count(*) FROM (
    SELECT 1 FROM webhook_deliveries WHERE state = delivery_state_pending() AND next_attempt_at <= now() LIMIT %(limit)s
) AS bounded


-- name: estimate_due_deliveries
EXPLAIN (FORMAT JSON) SELECT 1 FROM webhook_deliveries WHERE state = delivery_state_pending() AND next_attempt_at <= now()


-- name: oldest_due_age
SELECT extract(epoch FROM now() - min(next_attempt_at)) FROM webhook_deliveries
 WHERE state = delivery_state_pending() AND next_attempt_at <= now()


-- name: endpoints_by_status_and_circuit
-- Tenants register a handful of endpoints each: counted exactly. auth_failing: the endpoint's
-- latest answers were 401/403 in a row (a 2xx resets the count).
SELECT status, circuit_state, count(*), count(*) FILTER (WHERE auth_failures > 0)
  FROM webhook_endpoints
 GROUP BY status, circuit_state


-- name: recent_attempts_by_status
-- The newest attempts by primary key (ids grow with time), at most %(limit)s of them, so the
-- read stays bounded however long the ledger is; of those, the ended ones started within the
-- window. http_status is NULL for an attempt that got no HTTP answer.
SELECT http_status, count(*)
  FROM (SELECT http_status, outcome, started_at
          FROM webhook_delivery_attempts
         ORDER BY id DESC
         LIMIT %(limit)s) AS newest
 WHERE started_at > now() - make_interval(secs => %(window)s) AND outcome <> delivery_attempt_in_flight()
 GROUP BY http_status

-- Delivery's parts of the SLO report and of the self-audit (delivery/operations.py runs
-- these). Delivery states and attempt outcomes are delivery/functions.sql's constants, as in
-- dispatch.sql.


-- name: erp_delivery_latency
-- OPS-4: for the report window's supported jobs (the temporary table slo_window_jobs, made by
-- extraction's SLO report in this transaction), each webhook delivery of a terminal event
-- (``terminal_events``: completed, dead-lettered) and how long after the terminal transition
-- (the outbox event's commit) its first attempt answered 2xx. Verification deliveries are not
-- the ERP's.
WITH terminal AS (
    SELECT o.event_id, o.created_at AS terminal_at
      FROM slo_window_jobs w
      JOIN outbox_events o ON o.job_id = w.job_id AND o.event_type = ANY(%(terminal_events)s)
     WHERE w.supported
)
, deliveries AS (
    SELECT t.terminal_at,
           (SELECT min(a.ended_at) FROM webhook_delivery_attempts a
             WHERE a.delivery_id = d.id AND a.outcome = delivery_attempt_delivered()) AS delivered_at
      FROM terminal t
      JOIN webhook_deliveries d ON d.event_id = t.event_id AND NOT d.is_verification
)
SELECT (SELECT count(*) FROM terminal),
       count(*),
       count(delivered_at),
       percentile_cont(%(fractions)s::float8[])
           WITHIN GROUP (ORDER BY extract(epoch FROM delivered_at - terminal_at)::float8)
           FILTER (WHERE delivered_at IS NOT NULL)
  FROM deliveries


-- name: overdue_deliveries
-- OPS-6: PENDING deliveries more than ``lag`` seconds past their due time although their
-- endpoint may be sent to now (active, circuit not open, no Retry-After pending; the
-- conditions of scheduling.sql's take_due_deliveries), oldest first (delivery_due_idx). A
-- delivery its endpoint holds back is waiting by design, not overdue.
SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
 WHERE d.state = delivery_state_pending() AND d.next_attempt_at < now() - make_interval(secs => %(lag)s)
   AND (e.status = endpoint_status_active() OR d.is_verification)
   AND (e.circuit_open_until IS NULL OR e.circuit_open_until <= now())
   AND (e.retry_not_before IS NULL OR e.retry_not_before <= now())
 ORDER BY d.next_attempt_at, d.id
 LIMIT %(limit)s

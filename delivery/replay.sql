-- The operators' delivery statements (delivery/replay.py runs them): redeliver by filter,
-- replay the events an endpoint never had, expedite one delivery.
--
-- States are delivery/functions.sql's constants (or a parameter for the operator's filter), as
-- in dispatch.sql.


-- name: redeliverable_deliveries
-- The deliveries redeliver would put back (its dry run). Each filter is optional: NULL is
-- "any"; PostgreSQL folds the NULL tests away while planning, so a given filter is an
-- ordinary condition (delivery_endpoint_created_idx for an endpoint).
SELECT d.id FROM webhook_deliveries d JOIN webhook_events ev ON ev.event_id = d.event_id
 WHERE d.state = ANY(%(states)s) AND NOT d.is_verification
   AND (%(tenant)s::uuid IS NULL OR d.tenant_id = %(tenant)s)
   AND (%(endpoint)s::uuid IS NULL OR d.endpoint_id = %(endpoint)s)
   AND (%(type)s::text IS NULL OR d.event_type = %(type)s)
   AND (%(job)s::uuid IS NULL OR ev.job_id = %(job)s)
   AND (%(since)s::timestamptz IS NULL OR d.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR d.created_at < %(until)s)
   AND (%(ids)s::uuid[] IS NULL OR d.id = ANY(%(ids)s::uuid[]))


-- name: redeliver
-- The same filters as redeliverable_deliveries: back to PENDING, due now, with a fresh budget.
UPDATE webhook_deliveries AS d
   SET state = delivery_state_pending(), next_attempt_at = now(), hinted_at = NULL, lease_until = NULL,
       max_attempts = d.attempts + %(budget)s, updated_at = now()
  FROM webhook_events ev
 WHERE ev.event_id = d.event_id
   AND d.state = ANY(%(states)s) AND NOT d.is_verification
   AND (%(tenant)s::uuid IS NULL OR d.tenant_id = %(tenant)s)
   AND (%(endpoint)s::uuid IS NULL OR d.endpoint_id = %(endpoint)s)
   AND (%(type)s::text IS NULL OR d.event_type = %(type)s)
   AND (%(job)s::uuid IS NULL OR ev.job_id = %(job)s)
   AND (%(since)s::timestamptz IS NULL OR d.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR d.created_at < %(until)s)
   AND (%(ids)s::uuid[] IS NULL OR d.id = ANY(%(ids)s::uuid[]))
RETURNING d.id


-- name: events_missing_a_delivery
-- The tenant's events in the window (webhook_event_tenant_time_idx), of the subscribed types,
-- that this endpoint has no delivery of.
SELECT ev.event_id, ev.event_type FROM webhook_events ev
 WHERE ev.tenant_id = %(tenant)s AND ev.event_type = ANY(%(types)s)
   AND (%(since)s::timestamptz IS NULL OR ev.created_at >= %(since)s)
   AND (%(until)s::timestamptz IS NULL OR ev.created_at < %(until)s)
   AND (%(type)s::text IS NULL OR ev.event_type = %(type)s)
   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                    WHERE d.event_id = ev.event_id AND d.endpoint_id = %(endpoint)s)
 ORDER BY ev.created_at

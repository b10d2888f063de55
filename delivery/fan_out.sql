-- Fan-out's statements (delivery/fan_out.py runs them): an outbox event's webhook body, kept
-- once, and one delivery per subscribed endpoint under its deterministic id.
--
-- States and statuses are delivery/functions.sql's constants, as in dispatch.sql.


-- name: insert_webhook_event
-- The event's body, serialized once; a second fan-out of the event keeps the first one's bytes.
-- ``job`` is null for an event of no job (a batch's completion).
INSERT INTO webhook_events (event_id, tenant_id, event_type, job_id, body, created_at)
VALUES (%(event)s, %(tenant)s, %(type)s, %(job)s, %(body)s, now())
ON CONFLICT (event_id) DO NOTHING


-- name: insert_delivery
-- One delivery of the event to the endpoint, due now, under its deterministic id; none if
-- the pair has one already (a concurrent or repeated fan-out).
INSERT INTO webhook_deliveries (id, event_id, endpoint_id, tenant_id, event_type, is_verification, state,
                                attempts, max_attempts, next_attempt_at, last_error, response_snippet,
                                created_at, updated_at)
VALUES (%(id)s, %(event)s, %(endpoint)s, %(tenant)s, %(type)s, %(verification)s, delivery_state_pending(),
        0, %(max_attempts)s, now(), '', '', now(), now())
ON CONFLICT (event_id, endpoint_id) DO NOTHING
RETURNING id

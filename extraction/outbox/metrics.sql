-- The outbox relay's backlog as /metrics reports it (extraction/outbox/metrics.py runs this).


-- name: unpublished_events
-- outbox_unpublished_idx holds exactly these rows. Given to config.metrics.bounded_count.
SELECT 1 FROM outbox_events WHERE published_at IS NULL

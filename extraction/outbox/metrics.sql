-- The outbox relay's backlog as /metrics reports it (extraction/outbox/metrics.py runs these,
-- through config.metrics.bounded_count).


-- name: count_unpublished_events_bounded
-- outbox_unpublished_idx holds exactly these rows.
SELECT count(*) FROM (SELECT 1 FROM outbox_events WHERE published_at IS NULL LIMIT %(limit)s) AS bounded


-- name: estimate_unpublished_events
EXPLAIN (FORMAT JSON) SELECT 1 FROM outbox_events WHERE published_at IS NULL

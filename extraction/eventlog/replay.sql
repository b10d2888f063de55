-- The replay of the event log (extraction/eventlog/replay.py runs these).


-- name: keep_logged_event
-- One row per consumer group and record coordinates: a replay run twice adds nothing.
INSERT INTO event_log_records (consumer_group, topic, partition, "offset", event_id, event_type, job_id,
                               state_version, record_timestamp, read_at)
VALUES (%(group)s, %(topic)s, %(partition)s, %(offset)s, %(event_id)s, %(event_type)s, %(job_id)s,
        %(state_version)s, %(timestamp)s, now())
ON CONFLICT (consumer_group, topic, partition, "offset") DO NOTHING

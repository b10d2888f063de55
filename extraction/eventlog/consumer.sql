-- The Kafka consumer's own statements (extraction/eventlog/consumer.py runs these).


-- name: quarantine_record
-- A poison record, kept with its coordinates; re-reading it (a crash before the offset
-- commit) finds the row there and adds none.
INSERT INTO quarantined_messages (event_id, job_id, stored_digest, received_digest, payload, reason, received_at,
                                  topic, partition, "offset")
VALUES (%(event)s, %(job)s, '', %(digest)s, %(payload)s::jsonb, %(reason)s, now(),
        %(topic)s::text, %(partition)s::int, %(offset)s::bigint)
ON CONFLICT (topic, partition, "offset") WHERE topic IS NOT NULL DO NOTHING

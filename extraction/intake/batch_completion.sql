-- A batch's completion (extraction/intake/batch_completion.py runs these): a periodic sweep
-- finds the open batches whose every job is finished and completes each once, with its
-- extraction.batch_completed.v1 outbox event in the same transaction.
--
-- Finished: SUCCEEDED, REVIEW_REQUIRED (an outcome the client is told of), FAILED_TERMINAL,
-- and SPLIT when every part of the split job (its jobs by parent_id) is finished too.


-- name: lock_finished_batches
-- The open batches (batch_open_idx: accepted and not completed) with no item whose job, or a
-- part of it, is still on its way; oldest first, locked until the sweep's COMMIT. A second
-- sweep skips the batches the first holds (SKIP LOCKED) and, once they are committed, finds
-- their completed_at set when it re-reads the locked row: it completes none of them again.
SELECT b.id
  FROM extraction_batches AS b
 WHERE b.accepted_at IS NOT NULL AND b.completed_at IS NULL
   AND NOT EXISTS (
       SELECT 1
         FROM extraction_batch_items AS i
         JOIN extraction_jobs AS j ON j.id = i.job_id
        WHERE i.batch_id = b.id
          AND (j.state NOT IN (job_state_succeeded(), job_state_review_required(),
                               job_state_failed_terminal(), job_state_split())
               -- job_parts_idx: a split job is finished only with all its parts.
               OR (j.state = job_state_split()
                   AND EXISTS (SELECT 1
                                 FROM extraction_jobs AS part
                                WHERE part.parent_id = j.id
                                  AND part.state NOT IN (job_state_succeeded(), job_state_review_required(),
                                                         job_state_failed_terminal(), job_state_split())))))
 ORDER BY b.accepted_at
   FOR UPDATE OF b SKIP LOCKED
 LIMIT %(limit)s


-- name: complete_batch
-- The guarded completion: completed_at is set only while it is null, and the outbox event is
-- written only by the statement that set it (a SELECT in WITH runs only as far as it is read:
-- the final SELECT reads ``completed``, empty when the batch was completed already). So a
-- batch has at most one extraction.batch_completed.v1, whatever sweeps run.
-- ``counts``: the items' jobs by state (a split job as SPLIT), its parts by their states, and
-- ``refused``, the items refused with a problem; only what occurred (no zero entries).
-- Returns the batch's id when this statement completed it, no row otherwise.
WITH completed AS (
    UPDATE extraction_batches
       SET completed_at = now()
     WHERE id = %(batch)s AND completed_at IS NULL AND accepted_at IS NOT NULL
    RETURNING id, tenant_id
)
, outcomes AS (
    SELECT j.state AS outcome
      FROM extraction_batch_items AS i JOIN extraction_jobs AS j ON j.id = i.job_id
     WHERE i.batch_id = %(batch)s
    UNION ALL
    SELECT part.state
      FROM extraction_batch_items AS i JOIN extraction_jobs AS part ON part.parent_id = i.job_id
     WHERE i.batch_id = %(batch)s
    UNION ALL
    SELECT 'refused'
      FROM extraction_batch_items AS i
     WHERE i.batch_id = %(batch)s AND i.problem IS NOT NULL
)
, counted AS (
    SELECT coalesce(jsonb_object_agg(outcome, n), '{}'::jsonb) AS counts
      FROM (SELECT outcome, count(*) AS n FROM outcomes GROUP BY outcome) AS by_outcome
)
SELECT c.id,
       extraction_append_outbox_event(%(event)s, NULL, c.tenant_id, %(event_type)s,
                                      jsonb_build_object('batch_id', c.id, 'event_version', 1,
                                                         'counts', counted.counts),
                                      '{}'::jsonb)
  FROM completed AS c, counted

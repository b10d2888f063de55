-- The review queue as /metrics reports it (extraction/review/metrics.py runs this): jobs in
-- REVIEW_REQUIRED, waiting for a reviewer's decision. A job's updated_at is when it entered
-- review: nothing writes a REVIEW_REQUIRED job until a decision (or an operator's re-run)
-- moves it on.


-- name: review_queue
-- One pass for the size and the oldest entry, through job_review_queue_idx (the partial index
-- of REVIEW_REQUIRED jobs by updated_at): it reads the queue alone, however large the table.
SELECT count(*), extract(epoch FROM now() - min(updated_at))
  FROM extraction_jobs
 WHERE state = job_state_review_required()

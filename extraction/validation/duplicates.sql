-- Possible duplicates (extraction/validation/duplicates.py runs these): the fingerprints of the
-- invoice a job read, claimed in one statement, so that of two copies completing at the same
-- moment exactly one holds each key and the other is the duplicate.


-- name: claim_invoice_fingerprints
-- Each fingerprint of the job's invoice is claimed for the job, in key order (two jobs claiming
-- the same keys lock them in the same order: no deadlock), unless another job of the tenant
-- holds it: the unique index makes the second of two concurrent claims wait for the first to
-- commit and then take the conflict branch. A holder that ended in FAILED_TERMINAL (rejected by
-- a reviewer, past its deadline) no longer holds its invoice and gives the key up. Every key
-- comes back with its holder: the job itself, or the earlier job it is a duplicate of.
INSERT INTO invoice_fingerprints AS held (tenant_id, fingerprint, job_id, matched, created_at)
SELECT %(tenant)s, claimed.fingerprint, %(job)s, claimed.matched, now()
  FROM jsonb_to_recordset(%(fingerprints)s::jsonb) AS claimed(fingerprint text, matched jsonb)
 ORDER BY claimed.fingerprint
    ON CONFLICT (tenant_id, fingerprint) DO UPDATE
   SET job_id = CASE WHEN held.job_id <> EXCLUDED.job_id
                      AND EXISTS (SELECT FROM extraction_jobs j WHERE j.id = held.job_id AND j.state = 'FAILED_TERMINAL')
                     THEN EXCLUDED.job_id ELSE held.job_id END,
       matched = CASE WHEN held.job_id <> EXCLUDED.job_id
                       AND EXISTS (SELECT FROM extraction_jobs j WHERE j.id = held.job_id AND j.state = 'FAILED_TERMINAL')
                      THEN EXCLUDED.matched ELSE held.matched END,
       created_at = CASE WHEN held.job_id <> EXCLUDED.job_id
                          AND EXISTS (SELECT FROM extraction_jobs j WHERE j.id = held.job_id AND j.state = 'FAILED_TERMINAL')
                         THEN EXCLUDED.created_at ELSE held.created_at END
RETURNING held.fingerprint, held.job_id, held.matched, held.created_at

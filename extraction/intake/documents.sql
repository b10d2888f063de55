-- Storing uploaded documents (extraction/intake/documents.py runs this).


-- name: insert_document
-- ACC-4: a concurrent or repeated upload of the same bytes gets the row that won (no row).
INSERT INTO documents (id, tenant_id, sha256, version, size, content_type, storage_name, original_filename,
                       page_count, created_at)
VALUES (%(id)s, %(tenant)s, %(sha256)s, %(version)s, %(size)s, %(content_type)s, %(storage_name)s, %(filename)s,
        %(page_count)s, now())
ON CONFLICT (tenant_id, sha256) DO NOTHING
RETURNING id

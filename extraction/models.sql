-- The hot lookups of extraction/models.py: the accept path runs them for every request, so they
-- skip the ORM's query compilation.


-- name: document_reference
-- The tenant's document as a job request names it: its version and size (DocumentQuerySet.reference).
SELECT version, size FROM documents WHERE tenant_id = %(tenant)s AND id = %(document)s

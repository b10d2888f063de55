-- The hot lookups of accounts/models.py: every API request runs them, so they skip the ORM's
-- query compilation.


-- name: find_active_token
-- The unrevoked API token with this hash, and its tenant's slug and name (ApiTokenQuerySet.find_active).
SELECT k.id, k.tenant_id, k.role, k.last_used_at, t.slug, t.name
  FROM accounts_apitoken k JOIN accounts_tenant t ON t.id = k.tenant_id
 WHERE k.token_hash = %(hash)s AND k.revoked_at IS NULL

-- The tenant's validation policy and master data (extraction/validation/policy.py runs these,
-- prepared: the worker validates every answer). One statement per way the supplier is found;
-- each returns the policy's revision, the allowed currencies, the severity overrides, whether
-- the tenant has any supplier records, and the matching supplier rows as [name, vat_id, iban]
-- arrays. The worker keeps what it read by revision (extraction/validation/policy_cache.py).


-- name: tenant_policy_by_vat_id
-- The supplier by the invoice's (normalized) VAT id: one indexed lookup.
SELECT t.policy_revision, t.allowed_currencies, t.validation_overrides,
       EXISTS (SELECT FROM suppliers s WHERE s.tenant_id = t.id),
       (SELECT coalesce(jsonb_agg(jsonb_build_array(s.name, s.vat_id, s.iban) ORDER BY s.id), '[]')
          FROM suppliers s WHERE s.tenant_id = t.id AND s.vat_id = %(wanted)s)
  FROM accounts_tenant t
 WHERE t.id = %(tenant)s


-- name: tenant_policy_by_name
-- The invoice shows no VAT id: suppliers of that name, case-insensitively (what Django's
-- iexact does on PostgreSQL); the caller's comparable_name then decides among them.
SELECT t.policy_revision, t.allowed_currencies, t.validation_overrides,
       EXISTS (SELECT FROM suppliers s WHERE s.tenant_id = t.id),
       (SELECT coalesce(jsonb_agg(jsonb_build_array(s.name, s.vat_id, s.iban) ORDER BY s.id), '[]')
          FROM suppliers s WHERE s.tenant_id = t.id AND upper(s.name) = upper(%(wanted)s))
  FROM accounts_tenant t
 WHERE t.id = %(tenant)s


-- name: tenant_policy_without_supplier
-- The invoice names no supplier: no rows to match.
SELECT t.policy_revision, t.allowed_currencies, t.validation_overrides,
       EXISTS (SELECT FROM suppliers s WHERE s.tenant_id = t.id),
       '[]'::jsonb
  FROM accounts_tenant t
 WHERE t.id = %(tenant)s

-- The reference ERP's own statements (delivery/erp/views.py runs them).


-- name: post_invoice
-- The ERP effect, idempotent on its own key: one posting per job, whatever the delivery id.
INSERT INTO erp_ledger (connection_id, job_id, delivery_id, state_version, invoice_number, supplier_name,
                        currency, total, posted_at)
VALUES (%(connection)s, %(job)s, %(delivery)s, %(state_version)s, %(invoice_number)s, %(supplier_name)s,
        %(currency)s, %(total)s, now())
ON CONFLICT (connection_id, job_id) DO NOTHING

-- The database side of the job pipeline as it is now: every function and trigger the named
-- statements (lifecycle.sql, acceptance.sql, ...) rely on, in the order they are created. There
-- are no grants: the application's role owns the schema.
--
-- Migrations apply this file (config.sql.ApplyStatementFile), each statement a
-- CREATE OR REPLACE, so applying it again is harmless. To change a function, edit it here and
-- add a migration that applies the file again with its new sha256:
-- tests/extraction/test_database_functions.py fails until the latest such migration names the
-- file's current digest, and checks that a freshly migrated database defines exactly this.


-- name: job_state_accepted
-- JobState's values, as the statements name them: job_state_ready() and so on. IMMUTABLE SQL
-- functions are inlined and folded to constants while a statement is planned, also in the
-- generic plan of a prepared statement, so a query's state test still matches the partial
-- indexes' predicates; a state sent as a bound parameter would not.
-- tests/config/test_sql_statements.py checks them against JobState.
CREATE OR REPLACE FUNCTION job_state_accepted() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'ACCEPTED'::text $$


-- name: job_state_ready
CREATE OR REPLACE FUNCTION job_state_ready() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'READY'::text $$


-- name: job_state_running
CREATE OR REPLACE FUNCTION job_state_running() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'RUNNING'::text $$


-- name: job_state_retry_scheduled
CREATE OR REPLACE FUNCTION job_state_retry_scheduled() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'RETRY_SCHEDULED'::text $$


-- name: job_state_succeeded
CREATE OR REPLACE FUNCTION job_state_succeeded() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'SUCCEEDED'::text $$


-- name: job_state_review_required
CREATE OR REPLACE FUNCTION job_state_review_required() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'REVIEW_REQUIRED'::text $$


-- name: job_state_failed_terminal
CREATE OR REPLACE FUNCTION job_state_failed_terminal() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'FAILED_TERMINAL'::text $$


-- name: job_state_split
CREATE OR REPLACE FUNCTION job_state_split() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'SPLIT'::text $$


-- name: token_cost_micros
-- The one place that prices tokens: ``tokens`` at a policy's price per 1,000, in micros,
-- rounded down per job (a batch of releases sums the jobs' costs, so it charges what the
-- jobs one by one would).
CREATE OR REPLACE FUNCTION token_cost_micros(tokens bigint, price_per_1k_tokens_micros bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT tokens * price_per_1k_tokens_micros / 1000
$$


-- name: tenant_daily_spend
-- The one place that computes a tenant's spend today: the stored spend while spend_day is
-- today (0 after midnight, by the database's date), plus ``tokens`` at the policy's price.
-- A single SELECT, so the planner inlines it into the statements that use it.
CREATE OR REPLACE FUNCTION tenant_daily_spend(spend_day date, spent_today_micros bigint, tokens bigint,
                                              price_per_1k_tokens_micros bigint)
RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN spend_day = current_date THEN spent_today_micros ELSE 0 END
           + token_cost_micros(tokens, price_per_1k_tokens_micros)
$$


-- name: extraction_append_job_event
-- The one place that writes a job_events row. PL/pgSQL keeps the INSERT's plan for the
-- session, which matters in the claim and the completion.
CREATE OR REPLACE FUNCTION extraction_append_job_event(p_job_id uuid, p_tenant_id uuid, p_state_version integer,
                                                       p_from_state text, p_to_state text, p_reason text,
                                                       p_detail jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail, created_at)
    VALUES (p_job_id, p_tenant_id, p_state_version, p_from_state, p_to_state, p_reason, p_detail, now());
END $$


-- name: extraction_append_outbox_event
-- The one place that writes an outbox_events row (the relay publishes it after COMMIT), with
-- the trace context of the step that wrote it (the accepting request's). The lifecycle's
-- transitions pass none: the relay then parents its publish on the job's trace context.
-- What each event type's payload carries is declared in extraction/events.py.
CREATE OR REPLACE FUNCTION extraction_append_outbox_event(p_event_id uuid, p_job_id uuid, p_tenant_id uuid,
                                                          p_event_type text, p_payload jsonb,
                                                          p_trace_context jsonb DEFAULT '{}'::jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                               publish_attempts, last_error, trace_context)
    VALUES (p_event_id, p_job_id, p_tenant_id, p_event_type, p_payload, now(), 0, '', p_trace_context);
END $$


-- name: extraction_release_admission
-- A job leaving the pending states gives its admission share back (CAP-4): what it cost is
-- the tokens its attempts used, not the reservation it was admitted with.
CREATE OR REPLACE FUNCTION extraction_release_admission(p_tenant_id uuid, p_byte_size bigint,
                                                        p_reserved_tokens bigint, p_used_tokens bigint,
                                                        p_price_per_1k_tokens_micros bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE accounts_tenantusage
       SET pending_jobs = pending_jobs - 1,
           pending_bytes = pending_bytes - p_byte_size,
           reserved_tokens = reserved_tokens - p_reserved_tokens,
           spent_today_micros = tenant_daily_spend(spend_day, spent_today_micros, p_used_tokens,
                                                   p_price_per_1k_tokens_micros),
           spend_day = current_date
     WHERE tenant_id = p_tenant_id;
END $$


-- name: extraction_release_admissions
-- A batch of completions gives back the shares of many jobs (CAP-4): one UPDATE per tenant,
-- with that tenant's jobs summed (``p_spend_micros``: token_cost_micros per job, summed). The
-- tenants' rows are locked in the order given, which the caller sorts, so two batches over
-- the same tenants wait for each other instead of deadlocking.
CREATE OR REPLACE FUNCTION extraction_release_admissions(p_tenant_ids uuid[], p_jobs bigint[], p_bytes bigint[],
                                                         p_reserved_tokens bigint[], p_spend_micros bigint[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_tenant_ids, 1), 0) LOOP
        UPDATE accounts_tenantusage
           SET pending_jobs = pending_jobs - p_jobs[i],
               pending_bytes = pending_bytes - p_bytes[i],
               reserved_tokens = reserved_tokens - p_reserved_tokens[i],
               spent_today_micros = tenant_daily_spend(spend_day, spent_today_micros, 0, 0) + p_spend_micros[i],
               spend_day = current_date
         WHERE tenant_id = p_tenant_ids[i];
    END LOOP;
END $$


-- name: outbox_events_notify
-- Inserted outbox events wake the relay (a hint only: the relay also polls). Statement-level,
-- so a batch of inserts is one notification.
CREATE OR REPLACE FUNCTION outbox_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_events', '');
    RETURN NULL;
END $$


-- name: outbox_events_notify_trigger
CREATE OR REPLACE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_events_notify()


-- name: job_events_notify
-- Every job transition appends to job_events; the inserts wake the notifier process, which
-- pushes "job changed" notices to browsers. A hint only: the notifier also polls by event id,
-- so a lost notification delays a notice, never loses it.
CREATE OR REPLACE FUNCTION job_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('job_events', '');
    RETURN NULL;
END $$


-- name: job_events_notify_trigger
CREATE OR REPLACE TRIGGER job_events_notify AFTER INSERT ON job_events
    FOR EACH STATEMENT EXECUTE FUNCTION job_events_notify()


-- name: tenant_policy_revision_kept
-- accounts_tenant.policy_revision is the database's: raised by one when the validation policy
-- (allowed currencies, severity overrides) changes, else kept, whatever the UPDATE set it to. A
-- Django save() writes every column, with whatever revision it loaded; taken as written, a
-- save from a stale form could lower the revision and make a worker's outdated cached policy
-- look current. The suppliers' trigger raises it from inside a trigger (depth 2): kept as set.
CREATE OR REPLACE FUNCTION tenant_policy_revision_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NEW;
    END IF;
    NEW.policy_revision := OLD.policy_revision
        + CASE WHEN NEW.allowed_currencies IS DISTINCT FROM OLD.allowed_currencies
                 OR NEW.validation_overrides IS DISTINCT FROM OLD.validation_overrides
               THEN 1 ELSE 0 END;
    RETURN NEW;
END $$


-- name: tenant_policy_revision_kept_trigger
CREATE OR REPLACE TRIGGER tenant_policy_revision_kept BEFORE UPDATE ON accounts_tenant
    FOR EACH ROW EXECUTE FUNCTION tenant_policy_revision_kept()


-- name: suppliers_changed
-- Supplier master data is part of the validation policy: a statement that inserts, updates or
-- deletes suppliers raises their tenants' policy_revision once, in its own transaction (a CSV
-- import of thousands of rows is one raise per tenant, not one per row).
CREATE OR REPLACE FUNCTION suppliers_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE accounts_tenant SET policy_revision = policy_revision + 1
         WHERE id IN (SELECT tenant_id FROM new_suppliers);
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE accounts_tenant SET policy_revision = policy_revision + 1
         WHERE id IN (SELECT tenant_id FROM old_suppliers);
    ELSE
        UPDATE accounts_tenant SET policy_revision = policy_revision + 1
         WHERE id IN (SELECT tenant_id FROM new_suppliers UNION SELECT tenant_id FROM old_suppliers);
    END IF;
    RETURN NULL;
END $$


-- name: suppliers_inserted_trigger
CREATE OR REPLACE TRIGGER suppliers_inserted AFTER INSERT ON suppliers
    REFERENCING NEW TABLE AS new_suppliers FOR EACH STATEMENT EXECUTE FUNCTION suppliers_changed()


-- name: suppliers_updated_trigger
CREATE OR REPLACE TRIGGER suppliers_updated AFTER UPDATE ON suppliers
    REFERENCING OLD TABLE AS old_suppliers NEW TABLE AS new_suppliers
    FOR EACH STATEMENT EXECUTE FUNCTION suppliers_changed()


-- name: suppliers_deleted_trigger
CREATE OR REPLACE TRIGGER suppliers_deleted AFTER DELETE ON suppliers
    REFERENCING OLD TABLE AS old_suppliers FOR EACH STATEMENT EXECUTE FUNCTION suppliers_changed()

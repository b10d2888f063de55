from django.db import migrations

# JobState's values, as the statements in the .sql files name them: job_state_ready() and so
# on. IMMUTABLE SQL functions are inlined and folded to constants while a statement is
# planned, also in the generic plan of a prepared statement, so a query's state test still
# matches the partial indexes' predicates; a state sent as a bound parameter would not.
# tests/config/test_sql_statements.py checks these against JobState.
STATE_FUNCTIONS = [
    "CREATE FUNCTION job_state_accepted() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'ACCEPTED'::text $$",
    "CREATE FUNCTION job_state_ready() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'READY'::text $$",
    "CREATE FUNCTION job_state_running() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'RUNNING'::text $$",
    "CREATE FUNCTION job_state_retry_scheduled() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE"
    " AS $$ SELECT 'RETRY_SCHEDULED'::text $$",
    "CREATE FUNCTION job_state_succeeded() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE"
    " AS $$ SELECT 'SUCCEEDED'::text $$",
    "CREATE FUNCTION job_state_review_required() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE"
    " AS $$ SELECT 'REVIEW_REQUIRED'::text $$",
    "CREATE FUNCTION job_state_failed_terminal() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE"
    " AS $$ SELECT 'FAILED_TERMINAL'::text $$",
]

FUNCTIONS = [
    # The one place that computes a tenant's spend today: the stored spend while spend_day is
    # today (0 after midnight, by the database's date), plus ``tokens`` at the policy's price.
    # A single SELECT, so the planner inlines it into the statements that use it.
    """
    CREATE FUNCTION tenant_daily_spend(spend_day date, spent_today_micros bigint, tokens bigint,
                                       price_per_1k_tokens_micros bigint)
    RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT CASE WHEN spend_day = current_date THEN spent_today_micros ELSE 0 END
               + tokens * price_per_1k_tokens_micros / 1000
    $$
    """,
    # The one place that writes a job_events row. PL/pgSQL keeps the INSERT's plan for the
    # session, which matters in the claim and the completion.
    """
    CREATE FUNCTION extraction_append_job_event(p_job_id uuid, p_tenant_id uuid, p_state_version integer,
                                                p_from_state text, p_to_state text, p_reason text, p_detail jsonb)
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO job_events (job_id, tenant_id, state_version, from_state, to_state, reason, detail, created_at)
        VALUES (p_job_id, p_tenant_id, p_state_version, p_from_state, p_to_state, p_reason, p_detail, now());
    END $$
    """,
    # The one place that writes an outbox_events row (the relay publishes it after COMMIT).
    """
    CREATE FUNCTION extraction_append_outbox_event(p_event_id uuid, p_job_id uuid, p_tenant_id uuid,
                                                   p_event_type text, p_payload jsonb)
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                                   publish_attempts, last_error)
        VALUES (p_event_id, p_job_id, p_tenant_id, p_event_type, p_payload, now(), 0, '');
    END $$
    """,
    # A job leaving the pending states gives its admission share back (CAP-4): what it cost
    # is the tokens its attempts used, not the reservation it was admitted with.
    """
    CREATE FUNCTION extraction_release_admission(p_tenant_id uuid, p_byte_size bigint, p_reserved_tokens bigint,
                                                 p_used_tokens bigint, p_price_per_1k_tokens_micros bigint)
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
    """,
]

DROP_FUNCTIONS = [
    "DROP FUNCTION extraction_release_admission(uuid, bigint, bigint, bigint, bigint)",
    "DROP FUNCTION extraction_append_outbox_event(uuid, uuid, uuid, text, jsonb)",
    "DROP FUNCTION extraction_append_job_event(uuid, uuid, integer, text, text, text, jsonb)",
    "DROP FUNCTION tenant_daily_spend(date, bigint, bigint, bigint)",
    "DROP FUNCTION job_state_accepted()",
    "DROP FUNCTION job_state_ready()",
    "DROP FUNCTION job_state_running()",
    "DROP FUNCTION job_state_retry_scheduled()",
    "DROP FUNCTION job_state_succeeded()",
    "DROP FUNCTION job_state_review_required()",
    "DROP FUNCTION job_state_failed_terminal()",
]


class Migration(migrations.Migration):
    """The database functions the named statements share: job states as constants, and the one
    place each that writes a job event, writes an outbox event, releases a job's admission
    share and computes a tenant's daily spend."""

    dependencies = [("extraction", "0007_job_events_notify")]

    operations = [migrations.RunSQL(sql=STATE_FUNCTIONS + FUNCTIONS, reverse_sql=DROP_FUNCTIONS)]

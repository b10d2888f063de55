from django.db import migrations, models

# The one place that writes an outbox_events row, now with the trace context of the step that
# wrote it (the accepting request's). The other writers (the lifecycle's transitions) pass
# none: the relay then parents its publish on the job's trace context. The five-argument
# function is dropped first: with both, a five-argument call would be ambiguous.
APPEND_OUTBOX_EVENT = """
    CREATE FUNCTION extraction_append_outbox_event(p_event_id uuid, p_job_id uuid, p_tenant_id uuid,
                                                   p_event_type text, p_payload jsonb,
                                                   p_trace_context jsonb DEFAULT '{}'::jsonb)
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                                   publish_attempts, last_error, trace_context)
        VALUES (p_event_id, p_job_id, p_tenant_id, p_event_type, p_payload, now(), 0, '', p_trace_context);
    END $$
"""

APPEND_OUTBOX_EVENT_WITHOUT_CONTEXT = """
    CREATE FUNCTION extraction_append_outbox_event(p_event_id uuid, p_job_id uuid, p_tenant_id uuid,
                                                   p_event_type text, p_payload jsonb)
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO outbox_events (event_id, job_id, tenant_id, event_type, payload, created_at,
                                   publish_attempts, last_error)
        VALUES (p_event_id, p_job_id, p_tenant_id, p_event_type, p_payload, now(), 0, '');
    END $$
"""


class Migration(migrations.Migration):
    """The W3C trace context of the request that accepted a job, on the job and on its outbox
    events, so that every process's span of the job joins one trace (OPS-2)."""

    dependencies = [("extraction", "0011_operator_actions")]

    operations = [
        migrations.AddField(
            model_name="extractionjob",
            name="trace_context",
            field=models.JSONField(blank=True, db_default={}, default=dict),
        ),
        migrations.AddField(
            model_name="outboxevent",
            name="trace_context",
            field=models.JSONField(blank=True, db_default={}, default=dict),
        ),
        migrations.RunSQL(
            sql=["DROP FUNCTION extraction_append_outbox_event(uuid, uuid, uuid, text, jsonb)", APPEND_OUTBOX_EVENT],
            reverse_sql=[
                "DROP FUNCTION extraction_append_outbox_event(uuid, uuid, uuid, text, jsonb, jsonb)",
                APPEND_OUTBOX_EVENT_WITHOUT_CONTEXT,
            ],
        ),
    ]

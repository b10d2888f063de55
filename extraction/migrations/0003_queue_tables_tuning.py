from django.db import migrations


class Migration(migrations.Migration):
    """Database-side support for the workers.

    - ``outbox_events`` inserts NOTIFY the relay (a wake-up hint only: the relay also polls).
      A statement-level trigger folds a batch into one notification.
    - The hot queue tables leave room on each page for HOT updates (heartbeats, state
      changes) and are vacuumed early: dead tuples are what slows a SKIP LOCKED claim first.
    """

    dependencies = [("extraction", "0002_execution")]

    operations = [
        migrations.RunSQL(
            sql="""
            CREATE FUNCTION outbox_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('outbox_events', '');
                RETURN NULL;
            END $$;
            CREATE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events
                FOR EACH STATEMENT EXECUTE FUNCTION outbox_events_notify();
            ALTER TABLE extraction_jobs SET (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02,
                                             autovacuum_analyze_scale_factor = 0.02);
            ALTER TABLE outbox_events SET (fillfactor = 90, autovacuum_vacuum_scale_factor = 0.02);
            """,
            reverse_sql="""
            DROP TRIGGER outbox_events_notify ON outbox_events;
            DROP FUNCTION outbox_events_notify();
            ALTER TABLE extraction_jobs RESET (fillfactor, autovacuum_vacuum_scale_factor,
                                               autovacuum_analyze_scale_factor);
            ALTER TABLE outbox_events RESET (fillfactor, autovacuum_vacuum_scale_factor);
            """,
        ),
    ]

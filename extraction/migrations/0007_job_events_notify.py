from django.db import migrations


class Migration(migrations.Migration):
    """Every job transition appends to ``job_events``; its inserts NOTIFY the notifier process,
    which pushes "job changed" notices to browsers. A hint only: the notifier also polls by
    event id, so a lost notification delays a notice, never loses it."""

    dependencies = [("extraction", "0006_fair_claim_indexes")]

    operations = [
        migrations.RunSQL(
            sql="""
            CREATE FUNCTION job_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM pg_notify('job_events', '');
                RETURN NULL;
            END $$;
            CREATE TRIGGER job_events_notify AFTER INSERT ON job_events
                FOR EACH STATEMENT EXECUTE FUNCTION job_events_notify();
            """,
            reverse_sql="""
            DROP TRIGGER job_events_notify ON job_events;
            DROP FUNCTION job_events_notify();
            """,
        ),
    ]

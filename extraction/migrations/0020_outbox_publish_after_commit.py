from pathlib import Path

from django.db import migrations

from config.sql import ApplyStatementFile


class Migration(migrations.Migration):
    """extraction/functions.sql applied again for publishing after commit:
    extraction_append_outbox_event takes the seconds a row is written claimed for (its writer
    publishes it itself), and the relay's wake-up skips rows written so. The old signature is
    dropped first: beside the new one, a call with six arguments would be ambiguous."""

    dependencies = [("extraction", "0019_tenant_policy_revision")]

    operations = [
        migrations.RunSQL(
            "DROP FUNCTION extraction_append_outbox_event(uuid, uuid, uuid, text, jsonb, jsonb)",
            reverse_sql=migrations.RunSQL.noop,
        ),
        ApplyStatementFile(
            Path(__file__).resolve().parent.parent / "functions.sql",
            sha256="c5ce44d30173dd11008a9833cceca372ec546971f8bca96df1d7061f0247f28c",
        ),
    ]

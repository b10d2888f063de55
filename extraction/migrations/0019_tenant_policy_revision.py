from pathlib import Path

from django.db import migrations

from config.sql import ApplyStatementFile


class Migration(migrations.Migration):
    """extraction/functions.sql applied again for the tenant's policy revision: the triggers that
    raise accounts_tenant.policy_revision when the validation policy or the suppliers change, and
    keep it otherwise (the worker caches the policy by it)."""

    dependencies = [
        ("accounts", "0006_tenant_policy_revision"),
        ("extraction", "0018_batched_completion_functions"),
    ]

    operations = [
        ApplyStatementFile(
            Path(__file__).resolve().parent.parent / "functions.sql",
            sha256="146d63e4324e4868418306c9b7254fcec5ac4bebcd5dfe67cc435fe42500b91e",
        )
    ]

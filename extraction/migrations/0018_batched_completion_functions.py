from pathlib import Path

from django.db import migrations

from config.sql import ApplyStatementFile


class Migration(migrations.Migration):
    """extraction/functions.sql applied again for the batched completion: token_cost_micros (the
    one place that prices tokens, now also used by tenant_daily_spend) and
    extraction_release_admissions (a batch's shares given back per tenant, in tenant order)."""

    dependencies = [("extraction", "0017_rename_documenttext_extractedtext")]

    operations = [
        ApplyStatementFile(
            Path(__file__).resolve().parent.parent / "functions.sql",
            sha256="6f895ef63eaca8f858ddcf12c1cf4a45719bceb6384bca7083800e04b2d2913c",
        )
    ]

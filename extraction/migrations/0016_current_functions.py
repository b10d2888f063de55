from pathlib import Path

from django.db import migrations

from config.sql import ApplyStatementFile


class Migration(migrations.Migration):
    """The functions and triggers of 0003, 0007, 0008 and 0012, applied again from their one
    current source, extraction/functions.sql (the same definitions, with their comments there)."""

    dependencies = [("extraction", "0015_attempt_outcome_interrupted")]

    operations = [
        ApplyStatementFile(
            Path(__file__).resolve().parent.parent / "functions.sql",
            sha256="2e41d61e208e38262dee214e7c9be422b87daf8c29d90279d44a5f88de32d40e",
        )
    ]

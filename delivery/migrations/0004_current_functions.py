from pathlib import Path

from django.db import migrations

from config.sql import ApplyStatementFile


class Migration(migrations.Migration):
    """Delivery states, endpoint statuses, circuit states and attempt outcomes as SQL constants
    (delivery_state_pending() and so on), which the delivery statements call instead of taking
    them as parameters: states are spelt one way in both apps."""

    dependencies = [("delivery", "0003_erp_models_move_to_the_erp_app")]

    operations = [
        ApplyStatementFile(
            Path(__file__).resolve().parent.parent / "functions.sql",
            sha256="2a1c15958cfa761f531f817903172953f34653620810a2d31fbf40b49befb401",
        )
    ]

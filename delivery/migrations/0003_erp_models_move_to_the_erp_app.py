from django.db import migrations


class Migration(migrations.Migration):
    """The ERP's models leave delivery's state for the erp app (delivery.erp). Nothing is
    dropped: a database migrated before the move keeps its erp_* tables, which the erp app
    adopts when installed and which nothing reads when it is not."""

    dependencies = [
        ('delivery', '0002_delivery_endpoint_due_idx'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(name='ErpLedgerEntry'),
            migrations.DeleteModel(name='ErpInboxEntry'),
            migrations.DeleteModel(name='ErpConnection'),
        ]),
    ]

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

ERP_MODELS = ['ErpConnection', 'ErpInboxEntry', 'ErpLedgerEntry']


def create_missing_tables(apps, schema_editor):
    # A database migrated before the move already has these tables (delivery's 0001 made
    # them, with the same DDL and names): adopt them; create only the ones that are missing.
    existing = set(schema_editor.connection.introspection.table_names())
    for name in ERP_MODELS:
        model = apps.get_model('erp', name)
        if model._meta.db_table not in existing:
            schema_editor.create_model(model)


def drop_tables(apps, schema_editor):
    for name in reversed(ERP_MODELS):
        schema_editor.delete_model(apps.get_model('erp', name))


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('delivery', '0003_erp_models_move_to_the_erp_app'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='ErpConnection',
                fields=[
                    ('slug', models.SlugField(max_length=63, primary_key=True, serialize=False)),
                    ('tenant_label', models.CharField(max_length=200)),
                    ('secrets', models.JSONField(default=list)),
                    ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ],
                options={
                    'db_table': 'erp_connections',
                },
            ),
            migrations.CreateModel(
                name='ErpInboxEntry',
                fields=[
                    ('delivery_id', models.CharField(max_length=64, primary_key=True, serialize=False)),
                    ('body_sha256', models.CharField(max_length=64)),
                    ('event_type', models.CharField(max_length=64)),
                    ('received_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                    ('connection', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='inbox', to='erp.erpconnection')),
                ],
                options={
                    'verbose_name_plural': 'ERP inbox entries',
                    'db_table': 'erp_inbox',
                },
            ),
            migrations.CreateModel(
                name='ErpLedgerEntry',
                fields=[
                    ('id', models.BigAutoField(primary_key=True, serialize=False)),
                    ('job_id', models.UUIDField()),
                    ('delivery_id', models.CharField(max_length=64)),
                    ('state_version', models.PositiveIntegerField()),
                    ('invoice_number', models.CharField(blank=True, default='', max_length=128)),
                    ('supplier_name', models.CharField(blank=True, default='', max_length=256)),
                    ('currency', models.CharField(blank=True, default='', max_length=3)),
                    ('total', models.CharField(blank=True, default='', help_text='As extracted, a decimal string.', max_length=32)),
                    ('posted_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                    ('connection', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='ledger', to='erp.erpconnection')),
                ],
                options={
                    'verbose_name_plural': 'ERP ledger entries',
                    'db_table': 'erp_ledger',
                    'constraints': [models.UniqueConstraint(fields=('connection', 'job_id'), name='erp_ledger_one_posting_per_job')],
                },
            ),
        ]),
        migrations.RunPython(create_missing_tables, drop_tables),
    ]

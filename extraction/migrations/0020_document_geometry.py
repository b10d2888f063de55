from django.db import migrations, models
from django.db.models.lookups import Exact


class Migration(migrations.Migration):
    """Evidence on the page: where each page's words are printed (document_texts.geometry) and
    how many page images a document has (documents.page_count). Both nullable: texts and
    documents stored before have none, and no existing row is read to fill them in."""

    dependencies = [
        ("extraction", "0019_tenant_policy_revision"),
    ]

    operations = [
        migrations.AddField(
            model_name="document",
            name="page_count",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="extractedtext",
            name="geometry",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name="extractedtext",
            constraint=models.CheckConstraint(
                condition=Exact(
                    models.Func(models.F("geometry"), function="jsonb_array_length"),
                    models.Func(models.F("pages"), function="jsonb_array_length"),
                ),
                name="document_text_geometry_per_page",
            ),
        ),
    ]

from django.db import migrations


class Migration(migrations.Migration):
    """The model of a document's extracted text is ExtractedText, so that DocumentText names one
    thing (extraction.intake.text.DocumentText, the pages as a value). The table stays
    document_texts: nothing changes in the database."""

    dependencies = [("extraction", "0016_current_functions")]

    operations = [migrations.RenameModel(old_name="DocumentText", new_name="ExtractedText")]

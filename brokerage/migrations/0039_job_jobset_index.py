"""Job sets by ID alone, for the search box (issue 35): a number typed there may be a job set's. As for the job
list's index (0025), on PostgreSQL it lives on the partition of jobs not yet archived, which the search reads
(`archiveDay IS NULL`): the archive's months keep their slim set of indexes."""

from django.db import migrations, models

INDEX = models.Index(fields=["jobsetID"], name="job_jobset")


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute('CREATE INDEX "job_jobset" ON "panda_jobs_default" ("jobsetID")')
    else:
        schema_editor.add_index(apps.get_model("brokerage", "Job"), INDEX)


def drop(apps, schema_editor):
    schema_editor.execute('DROP INDEX "job_jobset"')


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0038_dirac_match_inputs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="job", index=INDEX)],
            database_operations=[migrations.RunPython(create, drop)],
        ),
    ]

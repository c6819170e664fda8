"""The job list's index (most recently changed first). On PostgreSQL the jobs are partitioned and the model's
indexes live on the active jobs' partition only (the archive's months have their own slim set, which has this
one): it is made there, under the same name."""

from django.db import migrations, models

INDEX = models.Index(fields=["-stateChangeTime", "-PandaID"], name="job_changed")


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            'CREATE INDEX "job_changed" ON "panda_jobs_default" ("stateChangeTime" DESC, "PandaID" DESC)'
        )
    else:
        schema_editor.add_index(apps.get_model("brokerage", "Job"), INDEX)


def drop(apps, schema_editor):
    schema_editor.execute('DROP INDEX "job_changed"')


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0024_hourly_error_summaries"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="job", index=INDEX)],
            database_operations=[migrations.RunPython(create, drop)],
        ),
    ]

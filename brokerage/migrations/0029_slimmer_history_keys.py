"""Issue 32: two indexes fewer on what a year of history keeps most of. A decision's task is read through
decision_task_created (task, -created), so the foreign key's own index goes. On PostgreSQL the job status log loses
its primary key (id, timestamp): nothing reads a log row by its id (a job's history is read by PandaID, old days
are dropped as partitions, Django deletes a job's logs by PandaID), and the key's index was a sixth of the table's
bytes. SQLite keeps its rowid key."""

import django.db.models.deletion
from django.db import migrations, models


def job_log_key_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute('ALTER TABLE panda_job_status_log DROP CONSTRAINT IF EXISTS "panda_job_status_log_pkey"')


def job_log_key_add(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute('ALTER TABLE panda_job_status_log ADD PRIMARY KEY ("id", "timestamp")')


class Migration(migrations.Migration):
    dependencies = [
        ("brokerage", "0028_job_status_log_slim_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="decision",
            name="task",
            field=models.ForeignKey(
                blank=True,
                db_column="jediTaskID",
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="decisions",
                to="brokerage.task",
            ),
        ),
        migrations.RunPython(job_log_key_drop, job_log_key_add),
    ]

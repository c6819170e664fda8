"""Startup checks (`manage.py check`): a bad DIRAC_GROUPS or DIRAC_CPU_SEGMENTS names the setting and the entry
instead of failing at the first match; `check --deploy` also says what an operator must still do."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register

from brokerage.engine.core.scenario import ScenarioError
from brokerage.engine.dirac.scenario import cpu_segments_from, groups_from


@register()
def dirac_settings_check(app_configs=None, **kwargs) -> list[Error]:
    errors = []
    for name, read in (
        ("DIRAC_GROUPS", lambda value: groups_from(value, "DIRAC_GROUPS")),
        ("DIRAC_CPU_SEGMENTS", lambda value: cpu_segments_from(list(value), "DIRAC_CPU_SEGMENTS")),
    ):
        try:
            read(getattr(settings, name))
        except ScenarioError as error:
            errors.append(Error(str(error), hint=f"Fix the {name} environment variable.", id="brokerage.E101"))
    shares = getattr(settings, "DIRAC_GROUP_SHARES", {})
    if not isinstance(shares, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in shares.values()
    ):
        errors.append(Error("DIRAC_GROUP_SHARES: expected an object of group → share (0 or more)", id="brokerage.E102"))
    return errors


@register(deploy=True)
def deployment_check(app_configs=None, **kwargs) -> list[Warning]:
    """`check --deploy` says what an operator must still do (issue 47: before `migrate` it logged relation errors
    from the database and reported nothing): migrations not applied, the database out of reach, the demo's grid
    simulator switched on. It reads only the migration table, and only when it exists."""
    from django.db import DatabaseError, connection
    from django.db.migrations.executor import MigrationExecutor
    from django.db.migrations.recorder import MigrationRecorder

    warnings = []
    try:
        if not MigrationRecorder(connection).has_table():
            pending = ["every migration"]
        else:
            executor = MigrationExecutor(connection)
            plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
            pending = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
    except DatabaseError as error:
        warnings.append(
            Warning(f"The database cannot be reached: {error}", hint="Check DATABASE_URL.", id="brokerage.W201")
        )
    else:
        if pending:
            shown = ", ".join(pending[:3]) + (f" and {len(pending) - 3} more" if len(pending) > 3 else "")
            warnings.append(
                Warning(
                    f"Migrations not applied: {shown}.",
                    hint="Run `manage.py migrate` before starting the web server, the workers and beat.",
                    id="brokerage.W202",
                )
            )
    if getattr(settings, "GRID_SIMULATOR", False):
        warnings.append(
            Warning(
                "GRID_SIMULATOR is on: the demo's simulator plays the pilots and moves jobs by itself.",
                hint="Never on a real grid: unset GRID_SIMULATOR (docs/production.md).",
                id="brokerage.W203",
            )
        )
    return warnings

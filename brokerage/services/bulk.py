"""Updating many rows with different values in one statement per few thousand rows.

Django's bulk_update writes one CASE … WHEN per column, which grows quadratically slow past a few hundred rows
(a cycle that picks 50,000 files spends seconds there). `UPDATE … FROM (VALUES …)` joins the new values
instead; PostgreSQL and SQLite (3.33 and later) both understand it and both name the VALUES columns column1,
column2, … On PostgreSQL the values travel as one array per column (`FROM unnest(…)`) instead.

One lock order. A statement that changes several rows locks them in whatever order its plan reads them, so two
such statements over the same tasks (a bulk progress update and a status move, seen in issue 31 as 15 deadlocks
an hour) can each hold a row the other wants. Every writer of several rows therefore first locks them with
`rows_lock`, in ascending primary key, in the transaction that changes them; a writer that can leave a busy row
for its next round says `skip_locked` and never waits at all. The locks are FOR NO KEY UPDATE, the lock an UPDATE
of non-key columns takes: it does not conflict with the KEY SHARE lock a foreign-key check takes on the parent of
an inserted row (a FOR UPDATE on a task did: the simulator's job and log inserts deadlocked with it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models, transaction
from django.db.models import QuerySet

ROWS_PER_STATEMENT = 2000
ROWS_PER_ARRAY_STATEMENT = 20000


def rows_lock(
    model: type[models.Model], ids: Iterable[Any], *, skip_locked: bool = False, within: QuerySet | None = None
) -> list[Any]:
    """Locks the rows of `model` with these primary keys in ascending order (the one lock order) and returns the
    keys of those that exist and were locked, ascending. `skip_locked`: rows another transaction holds are left
    out instead of waited for. `within`: a queryset of `model` the rows are looked for in (its filter on a
    partitioned table's time column keeps the lookup to the partitions it names). Call it inside the transaction
    that writes them; SQLite takes the whole database at BEGIN IMMEDIATE, so there it only filters and sorts."""
    ids = sorted(set(ids))
    if not ids or not connection.features.has_select_for_update:
        return ids
    skip = skip_locked and connection.features.has_select_for_update_skip_locked
    locked: list[Any] = []
    for start in range(0, len(ids), ROWS_PER_ARRAY_STATEMENT):  # ascending chunks keep the order whole
        chunk = ids[start : start + ROWS_PER_ARRAY_STATEMENT]
        base = model._default_manager.all() if within is None else within
        # only the rows of `model`: a `within` that joins (a task's files by the task's end) must not lock the
        # rows it joins, which come first in the lock order
        of = ("self",) if connection.features.has_select_for_update_of else ()
        queryset = base.filter(pk__in=chunk).order_by("pk").select_for_update(skip_locked=skip, no_key=True, of=of)
        locked += queryset.values_list("pk", flat=True)
    return locked


def rows_update(
    model: type[models.Model], ids: Iterable[Any], *, skip_locked: bool = False, **values: Any
) -> list[Any]:
    """Sets the same `values` on the rows with these primary keys, locked first in the one lock order. Returns the
    keys updated (without the busy rows when `skip_locked`)."""
    with transaction.atomic():
        locked = rows_lock(model, ids, skip_locked=skip_locked)
        if locked:
            model._default_manager.filter(pk__in=locked).update(**values)
    return locked


def rows_insert(model: type[models.Model], *, fields: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> int:
    """Inserts rows of `model`, each a tuple of values in the order of `fields` (the other columns take the
    model's defaults, the automatic key its sequence), and returns how many. For what is written in thousands a
    cycle and never read back by the writer (status logs): on PostgreSQL one array per column (`INSERT … SELECT
    FROM unnest(…)`), a statement per ROWS_PER_ARRAY_STATEMENT rows, without a model instance per row; elsewhere
    `bulk_create`."""
    rows = list(rows)
    if not rows:
        return 0
    meta = model._meta
    if connection.vendor != "postgresql":
        objects = [model(**dict(zip(fields, row, strict=True))) for row in rows]
        model._default_manager.bulk_create(objects, batch_size=1000)
        return len(objects)
    others = [
        field
        for field in meta.concrete_fields
        if field.name not in fields and field.attname not in fields and not isinstance(field, models.AutoField)
    ]
    defaults = tuple(field.get_default() for field in others)
    columns = [meta.get_field(name) for name in fields] + others
    rows = [(*row, *defaults) for row in rows]
    table = connection.ops.quote_name(meta.db_table)
    names = ", ".join(connection.ops.quote_name(field.column) for field in columns)
    arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in columns)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), ROWS_PER_ARRAY_STATEMENT):
            chunk = rows[start : start + ROWS_PER_ARRAY_STATEMENT]
            params = [[field.get_db_prep_save(row[i], connection) for row in chunk] for i, field in enumerate(columns)]
            cursor.execute(f"INSERT INTO {table} ({names}) SELECT * FROM unnest({arrays})", params)
    return len(rows)


def bulk_update_values(
    model: type[models.Model], *, fields: Sequence[str], rows: Iterable[tuple[Any, ...]], skip_locked: bool = False
) -> int:
    """Sets `fields` on the rows of `model` whose primary key is the first item of each tuple, the other items
    being the new values in the order of `fields`. The rows are locked first in the one lock order (`rows_lock`);
    with `skip_locked` the rows another transaction holds keep their values. Returns the number of rows updated."""
    rows = list(rows)
    if not rows:
        return 0
    with transaction.atomic():
        locked = set(rows_lock(model, (row[0] for row in rows), skip_locked=skip_locked))
        return _update_values(model, fields=fields, rows=[row for row in rows if row[0] in locked])


def _update_values(model: type[models.Model], *, fields: Sequence[str], rows: list[tuple[Any, ...]]) -> int:
    if not rows:
        return 0
    meta = model._meta
    table = connection.ops.quote_name(meta.db_table)
    pk_column = connection.ops.quote_name(meta.pk.column)
    columns = [meta.get_field(name) for name in fields]
    postgres = connection.vendor == "postgresql"
    if postgres:
        return _update_from_arrays(table, pk_column, meta.pk, columns, rows)

    assignments = ", ".join(
        f"{connection.ops.quote_name(field.column)} = v.column{index + 2}" for index, field in enumerate(columns)
    )
    pk_value = "v.column1"
    updated = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), ROWS_PER_STATEMENT):
            chunk = rows[start : start + ROWS_PER_STATEMENT]
            placeholders = ", ".join("(" + ", ".join(["%s"] * (len(fields) + 1)) + ")" for _ in chunk)
            params = [
                field.get_db_prep_save(item, connection)
                for row in chunk
                for field, item in zip((meta.pk, *columns), row, strict=True)
            ]
            cursor.execute(
                f"UPDATE {table} SET {assignments} FROM (VALUES {placeholders}) AS v "
                f"WHERE {table}.{pk_column} = {pk_value}",
                params,
            )
            updated += cursor.rowcount
    return updated


def _update_from_arrays(table: str, pk_column: str, pk_field, columns, rows: list[tuple[Any, ...]]) -> int:
    """PostgreSQL: one array parameter per column, `UPDATE … FROM unnest(…)`. A statement carries a column's
    values in one parameter, so the client never parses a query of thousands of placeholders."""
    fields = (pk_field, *columns)
    arrays = ", ".join(f"%s::{field.db_type(connection)}[]" for field in fields)
    names = ", ".join(f"c{index}" for index in range(len(fields)))
    assignments = ", ".join(
        f"{connection.ops.quote_name(field.column)} = v.c{index + 1}" for index, field in enumerate(columns)
    )
    sql = f"UPDATE {table} SET {assignments} FROM unnest({arrays}) AS v({names}) WHERE {table}.{pk_column} = v.c0"
    updated = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), ROWS_PER_ARRAY_STATEMENT):
            chunk = rows[start : start + ROWS_PER_ARRAY_STATEMENT]
            params = [[field.get_db_prep_save(row[i], connection) for row in chunk] for i, field in enumerate(fields)]
            cursor.execute(sql, params)
            updated += cursor.rowcount
    return updated

"""Updating many rows with different values in one statement per few thousand rows.

Django's bulk_update writes one CASE … WHEN per column, which grows quadratically slow past a few hundred rows
(a cycle that picks 50,000 files spends seconds there). `UPDATE … FROM (VALUES …)` joins the new values
instead; PostgreSQL and SQLite (3.33 and later) both understand it and both name the VALUES columns column1,
column2, … On PostgreSQL the values travel as one array per column (`FROM unnest(…)`) instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models

ROWS_PER_STATEMENT = 2000
ROWS_PER_ARRAY_STATEMENT = 20000


def bulk_update_values(model: type[models.Model], *, fields: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> int:
    """Sets `fields` on the rows of `model` whose primary key is the first item of each tuple, the other items
    being the new values in the order of `fields`. Returns the number of rows updated."""
    rows = list(rows)
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

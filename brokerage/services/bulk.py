"""Updating many rows with different values in one statement per few thousand rows.

Django's bulk_update writes one CASE … WHEN per column, which grows quadratically slow past a few hundred rows
(a cycle that picks 50,000 files spends seconds there). `UPDATE … FROM (VALUES …)` joins the new values
instead; PostgreSQL and SQLite (3.33 and later) both understand it and both name the VALUES columns column1,
column2, …
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models

ROWS_PER_STATEMENT = 2000


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

    def value(index: int, field) -> str:
        # PostgreSQL infers the VALUES columns' types from the parameters: cast them to the column's type
        reference = f"v.column{index}"
        return f"CAST({reference} AS {field.db_type(connection)})" if postgres else reference

    assignments = ", ".join(
        f"{connection.ops.quote_name(field.column)} = {value(index + 2, field)}" for index, field in enumerate(columns)
    )
    pk_value = value(1, meta.pk)
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

"""A pull's elements kept in the process between pulls, so that a pull reads only the rows that changed.

The matcher needs every Available element of a queue database (100,000 in `bench wmcore`); reading and decoding
them all took 3.5 s of a 14 s pullWork. A snapshot keeps them, one per (queue, database, status), and each pull
first asks the database which rows are there and at which version, then reads only the rows it does not hold at
that version:

- PostgreSQL: the version is the row's `xmin` and `ctid` (the transaction that wrote its current version and where
  that version lies — CouchDB's `_rev` for free: any write makes a new one, whoever makes it: a service, the
  admin, a bulk `UPDATE`) with its request's (the element's team and request name are read from the request).
- Other databases: every row is read again, and the row's content is its version.

Membership comes from the same question, so elements that left (taken, cancelled, deleted) leave the snapshot and
new ones enter it. A row read again whose matcher-relevant content is unchanged (only its stuck reason was
written, by this pull or another agent's) keeps its Element object, so the match's memos (the possible sites,
`MatchMemo`, one per use) stay valid for it. The elements are handed over in primary-key order, the last
tie-break of equal priority and creation time: a pull decides the same whether its snapshot was warm or cold,
in this process or another (tested). The snapshot is only a cache: losing it (another worker, a restart) costs
one full read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import connection

from brokerage.adapters.wmcore import JSON_FIELDS, MATCHER_FIELDS, ElementReader, element_rows
from brokerage.engine.wmcore.elements import Element
from brokerage.engine.wmcore.matching import MatchMemo, collector_paused
from brokerage.models import WMCoreElement, WMCoreRequest

# The element and request columns the matcher reads: a row whose values are all equal keeps its Element.
CONTENT_FIELDS = (*MATCHER_FIELDS, *(f"{name}_text" for name in JSON_FIELDS))
# A row version on PostgreSQL: the transaction that wrote it and where it lies. Every UPDATE makes a new tuple at a
# new place, so the pair changes even when one transaction writes a row twice (the xmin alone would not: a pull
# run inside a longer transaction, as the tests do, would miss the second write).
ROW_VERSION = "xmin::text || ctid::text"
SNAPSHOTS_KEPT = 16  # (queue, database, status) triples a process keeps: a few agents' pulls and getWorks
ROWS_PER_READ = 10_000  # primary keys per `IN (…)` when reading changed rows


@dataclass(slots=True)
class ElementEntry:
    """One element row as a pull uses it: the engine's Element and what the pull writes back (its stuck reason)."""

    pk: int
    element_id: str
    request_id: int
    element: Element
    content: tuple
    stuck_reason: str
    stuck_digest: str
    version: Any


class ElementSnapshot:
    """The elements of one queue database in one status, as of the last refresh."""

    def __init__(self, *, queue_id: int, database: str, status: str) -> None:
        self.key = {"queue_id": queue_id, "database": database, "status": status}
        self.entries: dict[int, ElementEntry] = {}
        self._memos: dict[str, MatchMemo] = {}
        self._reader = ElementReader()
        self._order: list[int] = []
        # PostgreSQL: the "pk version request" rows of the last refresh, and the requests' versions
        self._held: set[str] = set()
        self._request_versions: dict[int, str] = {}
        self.lock = threading.Lock()
        self.last_read = 0  # rows read by the last refresh (what the benchmark and the tests look at)

    def memo(self, use: str) -> MatchMemo:
        """The match memo for one use of these elements (pullWork, getWork, the local counts): each sees its own
        site names, so each keeps its own."""
        found = self._memos.get(use)
        if found is None:
            found = self._memos[use] = MatchMemo()
        return found

    @contextmanager
    def held(self):
        """For one pull: the snapshot locked, the cyclic collector paused (see collector_paused) and the
        rows refreshed; yields the entries by element id, in primary-key order."""
        with self.lock, collector_paused():
            yield self.refresh()

    def refresh(self) -> dict[str, ElementEntry]:
        """The rows as the database has them now, by element id in primary-key order; reads only what changed."""
        key = self.key
        queryset = WMCoreElement.objects.filter(
            queue_id=key["queue_id"], database=key["database"], Status=key["status"]
        )
        found = _versions(**key)
        rows, version_of, gone = self._every_row(queryset) if found is None else self._changed_rows(queryset, *found)
        self.last_read = len(rows)
        if len(self._reader) > 8 * len(self.entries) + 10_000:
            self._reader = ElementReader()  # texts of elements long gone
        added = self._take(rows, version_of)
        for pk in gone:
            del self.entries[pk]
        if gone or added or len(self._order) != len(self.entries):
            self._order = sorted(self.entries)
        entries = self.entries
        return {entry.element_id: entry for entry in map(entries.__getitem__, self._order)}

    def _every_row(self, queryset) -> tuple[list[dict[str, Any]], dict[int, str], list[int]]:
        """Without row versions: every row read again (its content is its version); the rest are gone."""
        rows = element_rows(queryset, "request_id")
        present = {row["pk"] for row in rows}
        return rows, {}, [pk for pk in self.entries if pk not in present]

    def _changed_rows(self, queryset, current: set[str], request_versions: dict[int, str]):
        """With row versions: only the new rows, rewritten rows and rows of a rewritten request are read, found by
        set differences (no loop over the rows); gone are the held rows no longer there and those that left
        between the two reads."""
        fresh = [_fields(row) for row in current - self._held]
        stale = {pk for pk, _, _ in fresh}
        left = {int(row.split(" ", 1)[0]) for row in self._held - current} - stale
        held_versions = self._request_versions
        changed = {rid for rid, version in request_versions.items() if held_versions.get(rid, version) != version}
        if changed:
            fresh += [fields for fields in map(_fields, current) if fields[2] in changed and fields[0] not in stale]
            stale = {pk for pk, _, _ in fresh}
        rows = self._read(queryset, sorted(stale), whole=len(stale) == len(current))
        if len(rows) > len(stale):  # a whole read may see rows inserted since the versions were read: not yet
            rows = [row for row in rows if row["pk"] in stale]
        self._held, self._request_versions = current, request_versions
        gone = left | (stale - {row["pk"] for row in rows})
        return rows, {pk: version for pk, version, _ in fresh}, [pk for pk in gone if pk in self.entries]

    def note_written(self, written: dict[int, tuple[str, str]]) -> None:
        """The stuck reasons a pull wrote (pk → reason, digest): the rows stay held at their new version instead
        of being read again. The version is read back inside the writing transaction, which holds the rows'
        locks, so it is the write's own; if that transaction rolls back, the rows return to a version the snapshot
        does not hold, and the next refresh reads them again."""
        if not written or connection.vendor != "postgresql":
            return  # elsewhere every refresh reads every row again
        elements = connection.ops.quote_name(WMCoreElement._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id, {ROW_VERSION} FROM {elements} WHERE id = ANY(%s)", [list(written)])
            versions = cursor.fetchall()
        for pk, version in versions:
            entry = self.entries.get(pk)
            if entry is not None:
                entry.stuck_reason, entry.stuck_digest = written[pk]
                self._held.discard(f"{pk} {entry.version} {entry.request_id}")
                self._held.add(f"{pk} {version} {entry.request_id}")
                entry.version = version

    @staticmethod
    def _read(queryset, pks: list[int], *, whole: bool) -> list[dict[str, Any]]:
        if whole:
            return element_rows(queryset, "request_id")
        rows: list[dict[str, Any]] = []
        for start in range(0, len(pks), ROWS_PER_READ):
            rows += element_rows(queryset.filter(pk__in=pks[start : start + ROWS_PER_READ]), "request_id")
        return rows

    def _take(self, rows: Iterable[dict[str, Any]], versions: dict[int, Any]) -> int:
        """Stores the rows read; returns how many were not held before."""
        added = 0
        for row in rows:
            content = tuple(row[name] for name in CONTENT_FIELDS)
            entry = self.entries.get(row["pk"])
            if entry is not None and entry.content == content:
                element = entry.element
            else:
                element = self._reader.element(row)
                added += entry is None
            self.entries[row["pk"]] = ElementEntry(
                pk=row["pk"],
                element_id=row["element_id"],
                request_id=row["request_id"],
                element=element,
                content=content,
                stuck_reason=row["stuck_reason"],
                stuck_digest=row["stuck_digest"],
                version=versions.get(row["pk"]),
            )
        return added


def _versions(*, queue_id: int, database: str, status: str) -> tuple[set[str], dict[int, str]] | None:
    """On PostgreSQL, the rows as "pk version request" strings and each of their requests' version; None elsewhere
    (read every row). The rows come as one aggregated text: 100,000 result tuples would be 100,000 objects for
    the cyclic collector to walk after the pull (0.1 s), strings are not. Two queries: a join with the requests
    costs more than asking for their versions apart."""
    if connection.vendor != "postgresql":
        return None
    elements = connection.ops.quote_name(WMCoreElement._meta.db_table)
    requests = connection.ops.quote_name(WMCoreRequest._meta.db_table)
    status_column = connection.ops.quote_name(WMCoreElement._meta.get_field("Status").column)
    where = f"WHERE queue_id = %s AND database = %s AND {status_column} = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT string_agg(id::text || ' ' || {ROW_VERSION} || ' ' || request_id::text, ';') "
            f"FROM {elements} {where}",
            [queue_id, database, status],
        )
        text = cursor.fetchone()[0]
        cursor.execute(
            f"SELECT id, {ROW_VERSION} FROM {requests} WHERE id IN (SELECT request_id FROM {elements} {where})",
            [queue_id, database, status],
        )
        return set(text.split(";")) if text else set(), dict(cursor.fetchall())


def _fields(row: str) -> tuple[int, str, int]:
    pk, version, request_id = row.split(" ")
    return int(pk), version, int(request_id)


_SNAPSHOTS: OrderedDict[tuple[int, str, str], ElementSnapshot] = OrderedDict()
_SNAPSHOTS_LOCK = threading.Lock()


def element_snapshot(*, queue_id: int, database: str = "queue", status: str = "Available") -> ElementSnapshot:
    """This process's snapshot of one queue database's elements in one status (use it through `held()`)."""
    key = (queue_id, database, status)
    with _SNAPSHOTS_LOCK:
        snapshot = _SNAPSHOTS.get(key)
        if snapshot is None:
            snapshot = _SNAPSHOTS[key] = ElementSnapshot(queue_id=queue_id, database=database, status=status)
            if len(_SNAPSHOTS) > SNAPSHOTS_KEPT:
                _SNAPSHOTS.popitem(last=False)
        _SNAPSHOTS.move_to_end(key)
        return snapshot


def element_snapshots_forget() -> None:
    """Drops every snapshot of this process (the next pull reads every row, as a new worker would)."""
    with _SNAPSHOTS_LOCK:
        _SNAPSHOTS.clear()

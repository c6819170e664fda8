"""Pages: numbered for the small collections, cursors for decisions and jobs (millions of rows, newest first,
stable while new rows arrive). A page or page size that is not a whole number in range is a 400 naming the
parameter (DRF would fall back to the default without a word); the schema gives the ranges."""

from __future__ import annotations

import re

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination, PageNumberPagination

MAX_PAGE_SIZE = 1000
MAX_PAGE = 10**9
WHOLE = re.compile(r"^[0-9]{1,10}$")


def _whole_number(request, name: str, high: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    value = int(raw) if WHOLE.match(raw) else 0
    if not 1 <= value <= high:
        raise ValidationError({name: [f"expected a whole number from 1 to {high}, got {raw!r}"]})
    return value


def _with_ranges(parameters: list[dict], ranges: dict[str, tuple[int, int]]) -> list[dict]:
    for parameter in parameters:
        if parameter["name"] in ranges:
            low, high = ranges[parameter["name"]]
            parameter["schema"] = {"type": "integer", "minimum": low, "maximum": high}
    return parameters


class NumberedPages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    last_page_strings = ()

    def get_page_size(self, request):
        return _whole_number(request, self.page_size_query_param, self.max_page_size) or self.page_size

    def get_page_number(self, request, paginator):
        return _whole_number(request, self.page_query_param, MAX_PAGE) or 1  # past the last page: 404

    def get_schema_operation_parameters(self, view):
        ranges = {self.page_query_param: (1, MAX_PAGE), self.page_size_query_param: (1, self.max_page_size)}
        return _with_ranges(super().get_schema_operation_parameters(view), ranges)


class NewestFirst(CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    ordering = "-pk"

    def get_page_size(self, request):
        return _whole_number(request, self.page_size_query_param, self.max_page_size) or self.page_size

    def get_schema_operation_parameters(self, view):
        ranges = {self.page_size_query_param: (1, self.max_page_size)}
        return _with_ranges(super().get_schema_operation_parameters(view), ranges)

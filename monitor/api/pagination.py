"""Pages: numbered for the small collections, cursors for decisions and jobs (millions of rows, newest first,
stable while new rows arrive)."""

from rest_framework.pagination import CursorPagination, PageNumberPagination


class NumberedPages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000


class NewestFirst(CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 1000
    ordering = "-pk"

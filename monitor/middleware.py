"""What a request meets when the database makes it wait too long, and what an API client gets for any error.

- A row another transaction holds (PostgreSQL's lock_timeout, brokerage.db_session): 409 with the message that
  the object is being changed elsewhere and to try again, within DB_WEB_LOCK_TIMEOUT_MS instead of a hung worker.
- A statement that ran past DB_WEB_STATEMENT_TIMEOUT_MS: 503, try a narrower filter or later.
- Under /api/, any other exception is still an error in the API's one JSON shape (a 500), never Django's HTML page.
Pages get the same words in the site's layout.
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from brokerage.db_session import lock_timeout_error, statement_timeout_error
from monitor.api.bodies import api_error

logger = logging.getLogger(__name__)

BUSY = (
    409,
    "busy",
    "Busy elsewhere",
    "What this request changes is being changed by another process at this moment; nothing was done. Try again "
    "in a few seconds.",
)
SLOW = (
    503,
    "timeout",
    "Took too long",
    "The database took too long to answer this request and it was stopped; nothing was changed. Narrow the "
    "filters (a time window, a status) or try again later.",
)
BROKEN = (
    500,
    "server_error",
    "Server error",
    "The request failed on our side; the error is in the server's log with the time of the request.",
)


class DatabaseWaitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if lock_timeout_error(exception):
            kind = BUSY
            logger.warning("%s %s: a row lock was not granted in time", request.method, request.path)
        elif statement_timeout_error(exception):
            kind = SLOW
            logger.warning("%s %s: statement timeout", request.method, request.path)
        elif request.path.startswith("/api/"):
            kind = BROKEN
            logger.error("%s %s failed", request.method, request.path, exc_info=exception)
        else:
            return None  # Django's own handling: the 500 page in the layout
        status, code, title, message = kind
        if request.path.startswith("/api/"):
            return api_error(status, code, message)
        back = request.path.removesuffix("action/")  # a task action goes back to its task page
        return render(request, "busy.html", {"title": title, "message": message, "back": back}, status=status)

"""What a request meets when the database makes it wait too long or is away, and the shape every error takes.

- A row another transaction holds (PostgreSQL's lock_timeout, brokerage.db_session): 409 with the message that
  the object is being changed elsewhere and to try again, within DB_WEB_LOCK_TIMEOUT_MS instead of a hung worker.
- A statement that ran past DB_WEB_STATEMENT_TIMEOUT_MS: 503, try a narrower filter or later.
- The database out of reach (a connection refused or lost: issue 47 found 89 of 90 requests a 500 while PostgreSQL
  was down for 20 s): 503 with Retry-After, every page and API call alike, the sign-in page included.
- Under /api/, any other exception is still an error in the API's one JSON shape (a 500), never Django's HTML page.

The shape is the client's: PanDA's envelope `{"success", "message", "data"}` for panda-client's paths, the pilot
protocol's `{"StatusCode", "errorDialog"}` for the pilot's (issue 47: a locked row answered them in our API's
shape), our API's error body under /api/, and a page in the site's look otherwise. A view class says its own shape
with a static `error_answer(status, message)`. The outage page touches no database: it is what failed.

Exceptions a view raises come through `process_exception`; those raised before any view runs (the session or the
user, read by a middleware) reach Django's handler500, which asks `failure_response` the same question.
"""

from __future__ import annotations

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve

from brokerage.db_session import lock_timeout_error, statement_timeout_error
from monitor.api.bodies import api_error

logger = logging.getLogger(__name__)

# seconds a client is asked to wait before trying again after an outage (Retry-After)
OUTAGE_RETRY_SECONDS = 30

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
AWAY = (
    503,
    "unavailable",
    "Database unavailable",
    f"The database cannot be reached at this moment; nothing was read or changed. Try again in "
    f"{OUTAGE_RETRY_SECONDS} s: operators are told by the server's log and the monitoring.",
)
BROKEN = (
    500,
    "server_error",
    "Server error",
    "The request failed on our side; the error is in the server's log with the time of the request.",
)


def database_away_error(error: BaseException) -> bool:
    """True when `error` says the database could not be reached or the connection was lost (not a timeout the
    database chose, which lock_timeout_error and statement_timeout_error name)."""
    return isinstance(error, OperationalError | InterfaceError)


def failure_kind(request: HttpRequest, exception: BaseException) -> tuple[int, str, str, str] | None:
    """The kind of failure `exception` is, logged once; None for an error of ours outside the API (the 500 page)."""
    if lock_timeout_error(exception):
        logger.warning("%s %s: a row lock was not granted in time", request.method, request.path)
        return BUSY
    if statement_timeout_error(exception):
        logger.warning("%s %s: statement timeout", request.method, request.path)
        return SLOW
    if database_away_error(exception):
        logger.error("%s %s: the database is unavailable: %s", request.method, request.path, exception)
        return AWAY
    if request.path.startswith("/api/"):
        logger.error("%s %s failed", request.method, request.path, exc_info=exception)
        return BROKEN
    return None


def _view_shape(request: HttpRequest):
    """The view's own error_answer, when the address names a view that has one (PanDA's and the pilot's)."""
    try:
        match = getattr(request, "resolver_match", None) or resolve(request.path_info)
    except Resolver404:
        return None
    view = getattr(match.func, "view_class", None) or getattr(match.func, "cls", None)
    return getattr(view, "error_answer", None)


def failure_answer(request: HttpRequest, kind: tuple[int, str, str, str]) -> HttpResponse:
    """The answer to a failure of `kind`, in the shape the client of this address reads."""
    status, code, title, message = kind
    shaped = _view_shape(request)
    if shaped is not None:
        response = shaped(status, message)
    elif request.path.startswith("/api/"):
        response = api_error(status, code, message)
    else:
        back = request.path.removesuffix("action/")  # a task action goes back to its task page
        response = busy_page(status=status, title=title, message=message, back=back)
    if kind is AWAY:
        response["Retry-After"] = str(OUTAGE_RETRY_SECONDS)
    return response


def busy_page(*, status: int, title: str, message: str, back: str, retry_after: int | None = None) -> HttpResponse:
    """A page saying why nothing was done and where to go back (busy, too slow, away, too many requests). Rendered
    without the request: it must read neither the session nor the user (the database may be what failed)."""
    page = render_to_string("busy.html", {"title": title, "message": message, "back": back})
    response = HttpResponse(page, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def failure_response(request: HttpRequest, exception: BaseException) -> HttpResponse | None:
    kind = failure_kind(request, exception)
    return None if kind is None else failure_answer(request, kind)


class DatabaseWaitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return failure_response(request, exception)  # None: Django's own handling, the 500 page in the layout

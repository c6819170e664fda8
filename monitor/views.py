"""Dashboard pages. Views stay thin: one selector call, one template."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from brokerage.selectors.overview import database_overview


@require_safe
def overview(request: HttpRequest) -> HttpResponse:
    """The home page: what is in the database, by entity and by status."""
    return render(request, "monitor/overview.html", {"overview": database_overview()})

"""Query parameters the API knows, and nothing else: an unknown one is a 400 naming it and the valid ones.

Issue 50: `/api/v1/jobs/?status=failed` answered assigned jobs (the job list's filter was `jobStatus`), and no
misspelt or unknown parameter was ever refused. A view's parameters are its filter set's, its ordering's, its
paginator's, DRF's `format`, and what the view reads itself (`extra_query_parameters`)."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

from .filters import StrictFilterBackend
from .ordering import StrictOrderingFilter


def query_parameters_known(view) -> set[str]:
    """Every query parameter `view` reads, for the request it is answering."""
    known = {api_settings.URL_FORMAT_OVERRIDE, *getattr(view, "extra_query_parameters", ())}
    for backend_class in getattr(view, "filter_backends", ()):
        backend = backend_class()
        if isinstance(backend, StrictFilterBackend):
            filterset = backend.get_filterset_class(view, view.get_queryset())
            if filterset is not None:
                known.update(filterset.base_filters)
        elif isinstance(backend, StrictOrderingFilter):
            known.add(backend.ordering_param)
    paginator = getattr(view, "paginator", None)
    if paginator is not None and getattr(view, "action", "list") in ("list", None):
        for name in ("page_query_param", "page_size_query_param", "cursor_query_param"):
            if getattr(paginator, name, None):
                known.add(getattr(paginator, name))
    return known


class KnownQueryParameters:
    """A view that refuses the query parameters it does not read (after authentication, permission and throttling:
    who may not ask learns nothing of the parameters)."""

    extra_query_parameters: tuple[str, ...] = ()

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        known = query_parameters_known(self)
        unknown = sorted(set(request.query_params) - known)
        if unknown:
            valid = ", ".join(sorted(known)) or "none"
            raise ValidationError(
                {name: [f"unknown query parameter; this operation takes: {valid}"] for name in unknown}
            )

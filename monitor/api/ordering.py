"""Ordering by query parameter, strictly: an unknown field is a 400 naming it (DRF would drop it without a word),
and the schema lists the fields a client may use."""

from __future__ import annotations

import re

from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter


class StrictOrderingFilter(OrderingFilter):
    def _valid_names(self, queryset, view, request) -> list[str]:
        return sorted(name for name, _ in self.get_valid_fields(queryset, view, {"request": request}))

    def get_ordering(self, request, queryset, view):
        raw = request.query_params.get(self.ordering_param)
        if raw is None:
            return self.get_default_ordering(view)
        terms = [term.strip() for term in raw.split(",")]
        valid = self._valid_names(queryset, view, request)
        unknown = [term for term in terms if term.removeprefix("-") not in valid]
        if unknown:
            raise ValidationError(
                {
                    self.ordering_param: [
                        f"unknown field {unknown[0]!r}: order by {', '.join(valid)} (a leading - reverses; "
                        "several separated by commas)"
                    ]
                }
            )
        return terms

    def get_schema_operation_parameters(self, view):
        valid = self._valid_names(view.get_queryset(), view, None)
        names = "|".join(re.escape(name) for name in valid)
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": f"Order by {', '.join(valid)}; a leading - reverses; several separated by commas.",
                "schema": {"type": "string", "pattern": f"^-?({names})(,-?({names}))*$"},
            }
        ]

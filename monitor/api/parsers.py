"""The API's one request parser: JSON, bounded in size and nesting, finite numbers only.

Client input must never reach a RecursionError or an OverflowError: each is a 400 with the place named (or 413
for a body over API_MAX_BODY_BYTES), in the API's error shape. NUL characters are the fields' to refuse (DRF's
text fields do, naming the field; a scenario for the preview is never stored).
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

from brokerage.jsonsafe import UnsafeJson, check_safe, json_loads_bounded


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = "The request body is too large."


def max_body_bytes() -> int:
    return int(getattr(settings, "API_MAX_BODY_BYTES", 1_000_000))


def refuse_large_body(content_length: int | None) -> None:
    limit = max_body_bytes()
    if content_length is not None and content_length > limit:
        raise RequestTooLarge(f"The request body has {content_length} bytes; at most {limit} are accepted.")


class BoundedJSONParser(JSONParser):
    """JSON only (the schema says so), read up to the size limit and checked before any serializer sees it."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        length = None
        if request is not None:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = None
        refuse_large_body(length)
        limit = max_body_bytes()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            refuse_large_body(len(raw))
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as error:
            raise exceptions.ParseError(f"JSON parse error - not {encoding} text at byte {error.start}") from None
        try:
            data = json_loads_bounded(text)
            check_safe(data, path="$", nul=True)
        except UnsafeJson as error:
            raise exceptions.ParseError(f"JSON parse error - {error}") from None
        except ValueError as error:
            raise exceptions.ParseError(f"JSON parse error - {error}") from None
        return data

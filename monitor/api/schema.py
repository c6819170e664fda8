"""The OpenAPI schema as the contract of what the API does: who may call each operation (anonymous reading
where the read rule allows it), every error status an operation can answer with the API's one error body, and
query parameters typed as strictly as the server checks them (whole-number ranges, strings without NUL).

A client generated from this schema must not break on any response; schemathesis checks it in the suite.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.conf import settings
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS

# text query parameters cannot hold NUL (the database refuses it): the schema says so
NO_NUL = "^[^\\u0000]*$"


class ErrorDetailSerializer(serializers.Serializer):
    status = serializers.IntegerField()
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(
        help_text="Field (or parameter, or non_field_errors) → its messages; empty unless the request was invalid."
    )


class ApiErrorSerializer(serializers.Serializer):
    """Every error of the API has this body."""

    error = ErrorDetailSerializer()


ERROR_STATUSES = {
    400: "The request is invalid: see error.fields for each field or query parameter.",
    401: "Authentication is missing or invalid: send `Authorization: Token …` (a token made in the admin).",
    403: "Not allowed: this client lacks the permission (or anonymous reading is off and no session was sent).",
    404: "Nothing with this id or name, or no such page or cursor.",
    406: "The Accept header asks for a format the API does not give.",
    429: "Too many requests from this client (API_ANON_RATE, API_USER_RATE): wait the Retry-After seconds.",
    503: "The database took longer than DB_WEB_STATEMENT_TIMEOUT_MS: narrow the filters or retry later.",
}
BODY_ERROR_STATUSES = {
    413: "The request body is larger than API_MAX_BODY_BYTES.",
    415: "The request body is not JSON (application/json).",
}


def allows_anonymous(view, method: str) -> bool:
    """Whether the read rule lets an anonymous client call this operation (API_ANONYMOUS_READ)."""
    from .permissions import ReadAccess, ReadOrModelPermission

    if not getattr(settings, "API_ANONYMOUS_READ", True):
        return False
    kinds = [type(permission) for permission in view.get_permissions()]
    if any(issubclass(kind, ReadAccess) for kind in kinds):
        return True
    if getattr(view, "anonymous_dry_run", False):  # DIRAC match with dry_run: explanation only
        return True
    if getattr(view, "panda_envelope", False):  # PanDA's reading methods (monitor.panda_api)
        return not view.writes
    return method in SAFE_METHODS and any(issubclass(kind, ReadOrModelPermission) for kind in kinds)


class ApiAutoSchema(AutoSchema):
    def get_auth(self):
        auths = super().get_auth()
        if allows_anonymous(self.view, self.method) and {} not in auths:
            auths.append({})
        return auths

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if getattr(self.view, "panda_envelope", False):  # PanDA's methods answer every error in their envelope
            return responses
        statuses = dict(ERROR_STATUSES)
        if self.method in ("POST", "PUT", "PATCH"):
            statuses.update(BODY_ERROR_STATUSES)
        conflict = getattr(self.view, "conflicts", {}).get(self.method)  # method → when the answer is 409
        if conflict:
            statuses[409] = conflict
        elif self.method in ("POST", "PUT", "PATCH", "DELETE"):
            statuses[409] = "Busy: another process is changing the same rows; nothing was done, retry in seconds."
        for code, description in sorted(statuses.items()):
            if str(code) not in responses:
                response = self._get_response_for_code(ApiErrorSerializer, str(code), direction=direction)
                responses[str(code)] = {**response, "description": description}
        return responses


class StrictDjangoFilterExtension(DjangoFilterExtension):
    """Our FilterSets check more than django-filter says: whole-number ranges and no NUL. Their parameters
    say it too, so that a value the schema allows is never refused."""

    priority = 1

    def resolve_filter_field(self, auto_schema, model, filterset_class, field_name, filter_field):
        parameters = super().resolve_filter_field(auto_schema, model, filterset_class, field_name, filter_field)
        low, high = filter_field.extra.get("min_value"), filter_field.extra.get("max_value")
        for parameter in parameters:
            schema = parameter["schema"]
            if low is not None or high is not None:
                schema.update({"type": "integer", "format": "int64"})
                schema.pop("enum", None)
                if low is not None:
                    schema["minimum"] = low
                if high is not None:
                    schema["maximum"] = high
            elif schema.get("type") == "string" and not {"enum", "format", "pattern"} & set(schema):
                schema["pattern"] = NO_NUL
        return parameters


SCENARIO_SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "scenario.schema.json"
# request bodies whose serializers refuse unknown keys (StrictKeys)
STRICT_REQUEST_COMPONENTS = (
    "PreviewRequestRequest",
    "ReplayRequestRequest",
    "WhatIfRequestRequest",
    "DiracResourceRequest",
    "GdpConfigRequest",
    "PatchedGdpConfigRequest",
)

# strict bodies that may be left out: a replay or a what-if with nothing changed
OPTIONAL_BODIES = ("ReplayRequestRequest", "WhatIfRequestRequest")


def _scenario_components() -> tuple[dict, dict]:
    """docs/scenario.schema.json as OpenAPI components: the document itself (Scenario) and its $defs, with the
    references moved from #/$defs/ to #/components/schemas/Scenario…"""
    text = SCENARIO_SCHEMA.read_text().replace('"#/$defs/', '"#/components/schemas/Scenario')
    document = json.loads(text)
    definitions = {f"Scenario{name}": schema for name, schema in document.pop("$defs", {}).items()}
    for key in ("$schema", "$id"):
        document.pop(key, None)
    return document, definitions


def gdpconfig_value_schema(parameter) -> dict:
    """The JSON value a parameter takes in an override: its own type (a number is not written as text here), its
    bounds and its choices."""
    if parameter.value_type == "bool":
        return {"type": "boolean"}
    if parameter.value_type == "str":
        return {"type": "string", "enum": list(parameter.choices)} if parameter.choices else {"type": "string"}
    schema: dict = {"type": "integer" if parameter.value_type == "int" else "number"}
    if parameter.minimum is not None:
        schema["minimum"] = parameter.minimum
    if parameter.maximum is not None:
        schema["maximum"] = parameter.maximum
    return schema


def gdpconfig_overrides_schema() -> dict:
    """KEY → value for every registered parameter; KEY_<name> variants for those that have them."""
    from brokerage.gdpconfig import REGISTRY

    properties, patterns = {}, {}
    for parameter in REGISTRY:
        properties[parameter.key] = gdpconfig_value_schema(parameter)
        if parameter.suffix:
            star = parameter.suffix == "workqueue"
            patterns[variant_pattern([parameter.key], star=star)] = gdpconfig_value_schema(parameter)
    return {
        "type": "object",
        "description": "KEY → value overriding the effective parameters (docs/gdpconfig.md); per-gshare, workflow "
        "or work-queue variants as KEY_<name>. Values in their own JSON type.",
        "properties": properties,
        "patternProperties": patterns,
        "additionalProperties": False,
    }


SUFFIX_CHARACTERS = "A-Za-z0-9_.\\-"


def _class_without(character: str) -> str:
    """The suffix characters (KEY_PATTERN's) except one, as a regex class."""
    allowed = [chr(c) for c in range(128) if re.fullmatch(f"[{SUFFIX_CHARACTERS}]", chr(c))]
    return "[" + "".join(re.escape(c) for c in allowed if c != character) + "]"


def _any_suffix_but(words: list[str]) -> str:
    """A regex for a KEY_<name> suffix that is none of `words`, without look-ahead (schema generators need plain
    regular expressions): a registered key such as FAST_REBRO_THRESHOLD_NQUEUE_FRAC is not a variant of
    FAST_REBRO_THRESHOLD_NQUEUE."""
    any_char = f"[{SUFFIX_CHARACTERS}]"
    if not words:
        return f"{any_char}+"
    (word,) = words  # one registered key collides today; more would need the intersection of these patterns
    n = len(word)
    options = [f"{any_char}{{1,{n - 1}}}" if n > 1 else "", f"{any_char}{{{n + 1},}}"]
    for index, character in enumerate(word):
        rest = f"{any_char}{{{n - index - 1}}}" if n - index - 1 else ""
        options.append(re.escape(word[:index]) + _class_without(character) + rest)
    return "(?:" + "|".join(option for option in options if option) + ")"


def variant_pattern(base_keys: list[str], *, star: bool = False) -> str:
    """KEY_<name> variants of these registered keys, excluding names that are registered keys themselves; `star`:
    the throttler's work-queue limits, whose MCORE/SCORE family key ends in * (NQUEUELIMIT_MC_16_SCORE*)."""
    from brokerage.gdpconfig import REGISTRY

    registered = {parameter.key for parameter in REGISTRY}
    parts = []
    for key in sorted(base_keys):
        taken = sorted(other[len(key) + 1 :] for other in registered if other.startswith(key + "_"))
        parts.append(re.escape(key) + "_" + _any_suffix_but(taken))
    return f"^(?:{'|'.join(parts)}){chr(92) + '*?' if star else ''}$"


def gdpconfig_row_request(base: dict, *, partial: bool) -> dict:
    """The body of a gdpconfig row write: a registered key (or its KEY_<name> variant) with the value in that
    parameter's type, bounds and choices; key and value always together (a PATCH may leave both out). Keys of the
    same type and bounds share one alternative, so that the schema stays small enough to generate requests from."""
    from brokerage.gdpconfig import REGISTRY

    schema = json.loads(json.dumps(base))
    schema["properties"]["key"] = {"type": "string", "maxLength": 64, "description": "A registered parameter."}
    schema["properties"]["value"] = {"description": "In the JSON type of the key's parameter, within its bounds."}
    groups: dict[str, tuple[dict, list[str], list[str], list[str]]] = {}
    for parameter in REGISTRY:
        value = gdpconfig_value_schema(parameter)
        _, keys, suffixed, starred = groups.setdefault(json.dumps(value, sort_keys=True), (value, [], [], []))
        keys.append(parameter.key)
        if parameter.suffix:
            (starred if parameter.suffix == "workqueue" else suffixed).append(parameter.key)
    alternatives = []
    for value, keys, suffixed, starred in groups.values():
        alternatives.append({"properties": {"key": {"enum": sorted(keys)}, "value": value}})
        for names, star in ((suffixed, False), (starred, True)):
            if names:
                pattern = variant_pattern(names, star=star)
                alternatives.append({"properties": {"key": {"pattern": pattern}, "value": value}})
    if partial:
        alternatives.append({"properties": {"key": False, "value": False}})  # neither: other fields only
        schema.pop("required", None)
        schema["dependentRequired"] = {"key": ["value"], "value": ["key"]}
    else:
        schema["required"] = sorted(set(schema.get("required", [])) | {"key", "value"})
    schema["anyOf"] = alternatives
    return schema


def _no_nul(schema: object) -> None:
    """Every text and every key in a request may not hold NUL (the parser refuses it): the schema says so."""
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            kinds = item.get("type")
            kinds = kinds if isinstance(kinds, list) else [kinds]
            if "string" in kinds and not {"enum", "pattern", "format", "const"} & set(item):
                item["pattern"] = NO_NUL
            if "object" in kinds and "propertyNames" not in item and item.get("additionalProperties") is not False:
                item["propertyNames"] = {"pattern": NO_NUL}
            stack.extend(value for key, value in item.items() if key != "propertyNames")
        elif isinstance(item, list):
            stack.extend(item)


def strict_bodies(result, generator, request, public):
    """Post-processing: request bodies with additionalProperties: false where the server refuses unknown keys,
    the preview body as exactly one of its two forms, its scenario as docs/scenario.schema.json (plugins limited
    to the registered ones), gdpconfig overrides typed per key, and no NUL in the text fields of a request."""
    from brokerage.plugins import plugin_registry

    schemas = result.get("components", {}).get("schemas", {})
    for name in STRICT_REQUEST_COMPONENTS:
        if name in schemas:
            schemas[name]["additionalProperties"] = False
    schemas["GdpConfigOverrides"] = gdpconfig_overrides_schema()
    for name, partial in (("GdpConfigRequest", False), ("PatchedGdpConfigRequest", True)):
        if name in schemas:
            schemas[name] = gdpconfig_row_request(schemas[name], partial=partial)
    overrides_ref = {"$ref": "#/components/schemas/GdpConfigOverrides"}
    preview = schemas.get("PreviewRequestRequest")
    if preview is not None:
        scenario, definitions = _scenario_components()
        scenario["properties"]["plugin"] = {
            "type": "string",
            "enum": sorted(plugin_registry().names()),
            "description": scenario["properties"]["plugin"].get("description", ""),
        }
        scenario["properties"]["gdpconfig"] = overrides_ref
        schemas.update(definitions)
        schemas["Scenario"] = scenario
        preview["properties"]["scenario"] = {
            "allOf": [{"$ref": "#/components/schemas/Scenario"}],
            "description": preview["properties"]["scenario"].get("description", ""),
        }
        preview["properties"]["gdpconfig"] = overrides_ref
        preview["oneOf"] = [{"required": ["scenario"]}, {"required": ["task"]}]
    for name in ("ReplayRequestRequest", "WhatIfRequestRequest"):
        if name in schemas:
            schemas[name]["properties"]["gdpconfig"] = overrides_ref
    for name, schema in schemas.items():
        if name.endswith("Request"):
            _no_nul(schema)
    # a body is required wherever an empty one is refused (the preview needs a scenario or a task)
    for path, operations in result.get("paths", {}).items():
        for operation in operations.values():
            # every text query parameter of our API refuses NUL (monitor.request_guard), the paginators' `cursor`
            # included: the fuzz test sent one in a cursor and called the 400 a schema-valid request refused.
            # PanDA's own paths keep PanDA's contract (refusals in its envelope), as before.
            parameters = operation.get("parameters", []) if isinstance(operation, dict) else []
            for parameter in parameters if not path.startswith(PANDA_PATHS) else []:
                if parameter.get("in") == "query":
                    _no_nul(parameter.get("schema", {}))
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            reference = (body or {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref", "")
            name = reference.rsplit("/", 1)[-1]
            if name in STRICT_REQUEST_COMPONENTS and "Patched" not in name and name not in OPTIONAL_BODIES:
                body["required"] = True
    return result


def without_bare_twins(endpoints):
    """Preprocessing: the paths issue 34 names without the router's trailing slash (`…/replay`, `…/what-if`) answer
    like their twins with it; the schema lists each operation once, under the router's path."""
    paths = {path for path, *_ in endpoints}
    return [(path, pattern, method, view) for path, pattern, method, view in endpoints if _listed(path, paths)]


def _listed(path: str, paths: set[str]) -> bool:
    if path.startswith(PANDA_PATHS):  # PanDA's own paths (monitor.panda_api), as panda-client calls them
        return not path.endswith("/")
    return path.endswith("/") or f"{path}/" not in paths


PANDA_PATHS = ("/api/v1/task/", "/api/v1/job/", "/api/v1/pilot/")

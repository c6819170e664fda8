"""Reading gdpconfig: the stored rows (cached), resolved against the registry's defaults."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache

from brokerage.gdpconfig import REGISTRY, ConfigView, GdpConfigError, Parameter
from brokerage.gdpconfig.profiles import PROFILES
from brokerage.models import GdpConfig

CACHE_KEY = "gdpconfig:rows:v1"
# A safety net only: every write through the service (or the admin) clears the cache at once.
CACHE_SECONDS = 300


def gdpconfig_cache_clear() -> None:
    cache.delete(CACHE_KEY)


def _stored_rows() -> dict[tuple[str, str], Any]:
    rows = cache.get(CACHE_KEY)
    if rows is None:
        rows = {}
        for row in GdpConfig.objects.all():
            try:
                rows[(row.key, row.vo)] = row.typed_value
            except GdpConfigError:
                # A row written around the service (raw SQL, an old dump) must not stop every cycle: it is
                # left out and shown as invalid in the admin, and the default applies meanwhile.
                continue
        cache.set(CACHE_KEY, rows, CACHE_SECONDS)
    return rows


def gdpconfig_view(*, vo: str = "", profile: str | None = None) -> ConfigView:
    """Every effective value for one VO, built from one (cached) read of the table; `profile` instead of the
    stored PROFILE (what-if)."""
    return ConfigView(_stored_rows(), vo=vo, profile=profile)


def gdpconfig_profile_effect(*, profile: str, vo: str = "") -> list[dict[str, Any]]:
    """What applying `profile` for `vo` would change: each parameter whose effective value differs, with the
    value now and after. Parameters the profile sets but a stored row keeps are listed too (`kept_by_row`), so
    the admin sees which rows to delete for the whole profile to apply."""
    now, then = gdpconfig_view(vo=vo), gdpconfig_view(vo=vo, profile=profile)
    profile_keys = set(PROFILES[profile].values)
    rows = []
    for parameter in REGISTRY:
        if parameter.suffix_only or parameter.key == "PROFILE":
            continue
        before, origin = now.explain(parameter.key)
        after, origin_after = then.explain(parameter.key)
        kept = parameter.key in profile_keys and not origin_after.startswith("profile")
        if before != after or kept:
            rows.append(
                {
                    "key": parameter.key,
                    "component": parameter.component,
                    "now": before,
                    "origin_now": origin,
                    "after": after,
                    "origin_after": origin_after,
                    "kept_by_row": kept,
                    "profile_value": PROFILES[profile].values.get(parameter.key),
                }
            )
    return rows


def gdpconfig_get(*, key: str, vo: str = "", gshare: str | None = None, workflow: str | None = None) -> Any:
    """The effective value of one parameter; UnknownParameter names a key the registry does not know."""
    return gdpconfig_view(vo=vo).get(key, gshare=gshare, workflow=workflow)


def gdpconfig_parameter_rows(*, vo: str = "") -> list[dict[str, Any]]:
    """The registry as rows for the admin and the monitor: default, effective value and where it comes from."""
    view = gdpconfig_view(vo=vo)
    # KEY_<gshare> / KEY_<workflow> rows: each is the value in force for that share or workflow (the general
    # value applies to every other one), shown under its parameter
    variants: dict[str, list[dict[str, Any]]] = {}
    for key, row_vo in sorted(_stored_rows()):
        found = REGISTRY.find(key)
        if found is None or found[1] is None or row_vo not in ("", vo):
            continue
        parameter, name = found
        kind = parameter.suffix or ""
        in_force = view.get(parameter.key, **({kind: name} if kind in ("gshare", "workflow") else {}))
        variants.setdefault(parameter.key, []).append({"key": key, "name": name, "kind": kind, "value": in_force})
    rows = []
    parameter: Parameter
    for parameter in REGISTRY:
        value, origin = view.explain(parameter.key)
        rows.append(
            {
                "parameter": parameter,
                "key": parameter.key,
                "component": parameter.component,
                "type": parameter.value_type,
                "unit": parameter.unit,
                "bounds": parameter.bounds_text,
                "default": parameter.default_text,
                "effective": "unset" if value is None else value,
                "origin": origin,
                "overridden": origin != "default" and origin != "unset",
                "description": parameter.description,
                "source": parameter.source,
                "suffix": parameter.suffix,
                "variants": variants.get(parameter.key, []),
            }
        )
    return rows

"""Reading gdpconfig: the stored rows (cached), resolved against the registry's defaults."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db.models import Count, Prefetch

from brokerage.gdpconfig import REGISTRY, ConfigView, GdpConfigError, Parameter
from brokerage.gdpconfig.profiles import PROFILES
from brokerage.models import (
    GdpConfig,
    GdpConfigChange,
    GdpConfigRevision,
    GlobalShare,
)

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


STORED_ROW = "stored row"


def gdpconfig_parameter_rows(*, vo: str = "") -> list[dict[str, Any]]:
    """The registry as rows for the admin and the monitor: default, effective value and where it comes from."""
    config = gdpconfig_view(vo=vo)
    # KEY_<gshare> / KEY_<workflow> rows: each is the value in force for that share or workflow (the general
    # value applies to every other one), shown under its parameter
    variants: dict[str, list[dict[str, Any]]] = {}
    for key, row_vo in sorted(_stored_rows()):
        found = REGISTRY.find(key)
        if found is None or found[1] is None or row_vo not in ("", vo):
            continue
        parameter, name = found
        kind = parameter.suffix or ""
        in_force = config.get(parameter.key, **({kind: name} if kind in ("gshare", "workflow") else {}))
        variants.setdefault(parameter.key, []).append(
            {"key": key, "name": name, "kind": kind, "value": in_force, "origin": STORED_ROW}
        )
    rows = []
    parameter: Parameter
    for parameter in REGISTRY:
        value, origin = config.explain(parameter.key)
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
                # the row's own key wins: "stored row" (the key column names it; a 22-letter key here widened the
                # page past 1,024 px), another key (a per-gshare one) by its name
                "origin": STORED_ROW if origin == parameter.key else origin,
                "overridden": origin != "default" and origin != "unset",
                "description": parameter.description,
                "source": parameter.source,
                "suffix": parameter.suffix,
                "variants": variants.get(parameter.key, []),
            }
        )
    return rows


def gdpconfig_revision_list(*, limit: int = 50, with_cycle_counts: bool = False) -> list:
    """The newest revisions first, each with its changes; with `with_cycle_counts`, how many cycles ran under each
    (a count over the cycles' revision index: only the revisions page shows it, /gdpconfig/ does not pay for it)."""
    revisions = GdpConfigRevision.objects.prefetch_related(
        Prefetch("changes", queryset=GdpConfigChange.objects.order_by("pk"))
    )
    if with_cycle_counts:
        revisions = revisions.annotate(n_cycles=Count("cycles"))
    return list(revisions.order_by("-pk")[:limit])


def gdpconfig_revision_diff(*, old, new) -> list[dict]:
    """What differs between two revisions, row by row (app, component, key, VO): the value before and after, None
    where the row is absent; sorted by key."""
    before = {tuple(row[:4]): row for row in old.rows}
    after = {tuple(row[:4]): row for row in new.rows}
    rows = []
    for identity in sorted(set(before) | set(after), key=lambda item: (item[2], item[3], item[0], item[1])):
        was, now = before.get(identity), after.get(identity)
        if was is not None and now is not None and was[4:] == now[4:]:
            continue
        app, component, key, vo = identity
        rows.append(
            {
                "app": app,
                "component": component,
                "key": key,
                "vo": vo,
                "before": was[4] if was is not None else None,
                "after": now[4] if now is not None else None,
                "change": "added" if was is None else "removed" if now is None else "changed",
            }
        )
    return rows


def gdpconfig_revision_previous(*, revision):
    """The revision before `revision`, None for the first."""
    return GdpConfigRevision.objects.filter(pk__lt=revision.pk).order_by("-pk").first()


def gdpconfig_revision_detail(*, revision_id: int, against_id: int | None = None) -> dict | None:
    """One revision: its rows, its difference from `against_id` (else the revision before it), and what restoring
    it would change in the stored configuration now, as gdpconfig overrides a what-if can run (a row it lacks
    comes back to its default under the live profile; per-gshare and per-workflow variants cannot be expressed
    that way and are listed apart). None when there is no such revision."""
    revision = GdpConfigRevision.objects.filter(pk=revision_id).first()
    if revision is None:
        return None
    against = (
        GdpConfigRevision.objects.filter(pk=against_id).first()
        if against_id
        else gdpconfig_revision_previous(revision=revision)
    )
    latest = GdpConfigRevision.objects.order_by("-pk").first()
    to_restore = gdpconfig_revision_diff(old=latest, new=revision) if latest.pk != revision.pk else []
    live = ConfigView.from_flat({}, profile=gdpconfig_view().profile)
    in_force_now = cycle_gdpconfig()
    overrides, in_force, not_expressible = {}, {}, []
    for row in to_restore:
        found = REGISTRY.find(row["key"])
        # a per-gshare or per-workflow row (DISK_THRESHOLD_Express) is an override as it is written (issue 50)
        if found is None or row["vo"] not in ("", "atlas"):
            not_expressible.append(row["key"])
            continue
        parameter = found[0]
        value = row["after"] if row["after"] is not None else live.get(parameter.key)
        overrides[row["key"]] = parameter.parse(value, row["key"]) if isinstance(value, str) else value
        now_value = in_force_now.get(row["key"], in_force_now.get(parameter.key, live.get(parameter.key)))
        if now_value is not None:
            in_force[row["key"]] = now_value
    return {
        "revision": revision,
        "against": against,
        "difference": gdpconfig_revision_diff(old=against, new=revision) if against else [],
        "latest": latest,
        "to_restore": to_restore,
        "restore_overrides": overrides,
        "in_force": in_force,
        "not_expressible": not_expressible,
    }


def cycle_gdpconfig(*, vo: str = "atlas", profile: str | None = None) -> dict:
    """The effective registered parameters a cycle runs with (recorded in the cycle), per-gshare variants
    included; unset parameters are left out so the engine applies the same defaults. `profile` replaces the
    stored PROFILE (what-if previews)."""
    gshares = tuple(GlobalShare.objects.values_list("name", flat=True))
    flat = gdpconfig_view(vo=vo, profile=profile).as_flat(gshares=gshares)
    return {key: value for key, value in flat.items() if value is not None and REGISTRY.find(key) is not None}


def gdpconfig_overview(*, vo: str = "atlas") -> dict[str, Any]:
    """Effective parameters with their defaults and origin, and the recent revisions with their changes."""
    from brokerage.selectors.gdpconfig import gdpconfig_parameter_rows, gdpconfig_revision_list

    return {
        "parameters": gdpconfig_parameter_rows(vo=vo),
        "revisions": gdpconfig_revision_list(limit=30),
    }

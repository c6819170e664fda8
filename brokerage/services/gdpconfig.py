"""Writing gdpconfig: validation against the registry, the row, and a change-history entry, in one transaction."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from brokerage.gdpconfig import REGISTRY, VALUE_TYPES, GdpConfigError, format_value, parse_value
from brokerage.gdpconfig.profiles import PROFILES
from brokerage.gdpconfig.registry import KEY_PATTERN
from brokerage.models import GdpConfig, GdpConfigChange, GdpConfigRevision


class GdpConfigInputError(GdpConfigError):
    """A gdpconfig write refused; `field` names the input that is wrong (for form and API error bodies)."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class GdpConfigInput:
    """A validated, normalised gdpconfig row: what will be stored."""

    app: str
    component: str
    key: str
    vo: str
    value: str
    type: str
    is_custom: bool


def gdpconfig_validate(
    *,
    key: str,
    value: object,
    vo: str = "",
    value_type: str = "",
    app: str = "",
    component: str = "",
    is_custom: bool = False,
) -> GdpConfigInput:
    """Checks one row against the registry and returns it normalised; GdpConfigInputError says which field.

    A registered key (or its KEY_<gshare>/KEY_<workflow> variant) takes its app, component and type from the
    registry and its value is parsed and bounds-checked. Any other key is refused unless `is_custom` is set,
    and then needs its own app, component and type.
    """
    key = (key or "").strip()
    vo = (vo or "").strip()
    if not KEY_PATTERN.match(key):
        raise GdpConfigInputError("key", f"'{key}' is not a valid parameter name (letters, digits, _ . -)")
    found = REGISTRY.find(key)
    if key.endswith("*") and (found is None or found[0].suffix != "workqueue" or not found[1]):
        raise GdpConfigInputError(
            "key", f"'{key}': only a work queue's MCORE/SCORE limit ends in * (NQUEUELIMIT_<work queue>_MCORE*)"
        )
    if found is not None:
        parameter, _suffix = found
        try:
            typed = parameter.parse(value, key)
        except GdpConfigError as error:
            raise GdpConfigInputError("value", str(error)) from None
        return GdpConfigInput(
            app=parameter.app,
            component=parameter.component,
            key=key,
            vo=vo,
            value=format_value(parameter.value_type, typed),
            type=parameter.value_type,
            is_custom=False,
        )
    if not is_custom:
        raise GdpConfigInputError(
            "key", f"unknown gdpconfig parameter '{key}': tick 'custom' to store a key the registry does not know"
        )
    if value_type not in VALUE_TYPES:
        raise GdpConfigInputError("type", f"{key}: choose the type of a custom parameter ({', '.join(VALUE_TYPES)})")
    for field, text in (("app", app), ("component", component)):
        if not (text or "").strip():
            raise GdpConfigInputError(field, f"{key}: a custom parameter needs its {field}")
    try:
        typed = parse_value(key, value_type, value)
    except GdpConfigError as error:
        raise GdpConfigInputError("value", str(error)) from None
    return GdpConfigInput(
        app=app.strip(),
        component=component.strip(),
        key=key,
        vo=vo,
        value=format_value(value_type, typed),
        type=value_type,
        is_custom=True,
    )


def _username(user: AbstractBaseUser | None) -> str:
    return user.get_username() if user is not None and user.is_authenticated else ""


class GdpConfigConflict(GdpConfigError):
    """Another row already has this app, component, key and VO."""

    field = "key"


@transaction.atomic
def gdpconfig_save(
    *,
    key: str,
    value: object,
    vo: str = "",
    value_type: str = "",
    app: str = "",
    component: str = "",
    is_custom: bool = False,
    descr: str = "",
    user: AbstractBaseUser | None = None,
    comment: str = "",
    instance: GdpConfig | None = None,
    revision_action: str = "save",
) -> GdpConfig:
    """Creates or updates one row (the one given, else the one with the same app/component/key/vo) and
    records the change with its author, and the whole configuration after it as a revision (`revision_action`
    says what made it; empty: no revision, the caller makes one for several changes). Saving the same value again
    records nothing."""
    data = gdpconfig_validate(
        key=key, value=value, vo=vo, value_type=value_type, app=app, component=component, is_custom=is_custom
    )
    if revision_action:
        _revision_baseline()
    now = timezone.now()
    if instance is None or instance.pk is None:
        instance = (
            GdpConfig.objects.select_for_update(no_key=True)
            .filter(app=data.app, component=data.component, key=data.key, vo=data.vo)
            .first()
        )
    else:
        instance = GdpConfig.objects.select_for_update(no_key=True).get(pk=instance.pk)
        other = (
            GdpConfig.objects.filter(app=data.app, component=data.component, key=data.key, vo=data.vo)
            .exclude(pk=instance.pk)
            .first()
        )
        if other is not None:  # the unique constraint would refuse it: say which row is in the way
            raise GdpConfigConflict(
                f"gdpconfig row {other.pk} already holds {data.key} for app '{data.app}', component "
                f"'{data.component}', VO '{data.vo}': change that row instead"
            )
    old_value = instance.value if instance is not None else ""
    action = "create" if instance is None else "update"
    if instance is None:
        instance = GdpConfig(created=now)
    changed = action == "create" or any(
        getattr(instance, field) != getattr(data, field) for field in ("app", "component", "key", "vo", "value", "type")
    )
    for field in ("app", "component", "key", "vo", "value", "type", "is_custom"):
        setattr(instance, field, getattr(data, field))
    if descr or action == "create":
        instance.descr = descr or _registry_description(data.key)
    if changed:
        instance.modified = now
    instance.save()
    if changed:
        change = GdpConfigChange.objects.create(
            parameter=instance,
            app=data.app,
            component=data.component,
            key=data.key,
            vo=data.vo,
            action=action,
            old_value=old_value,
            new_value=data.value,
            user=user if user is not None and user.is_authenticated else None,
            username=_username(user),
            comment=comment,
            changed_at=now,
        )
        if revision_action:
            summary = f"{data.key}{f' [{data.vo}]' if data.vo else ''}: {old_value or '—'} → {data.value}"
            revision = gdpconfig_revision_make(
                action=revision_action, summary=summary, user=user, comment=comment, now=now
            )
            GdpConfigChange.objects.filter(pk=change.pk).update(revision=revision)
    return instance


@transaction.atomic
def gdpconfig_delete(
    *, instance: GdpConfig, user: AbstractBaseUser | None = None, comment: str = "", revision: bool = True
) -> None:
    """Deletes a row (its parameter falls back to the VO-less row or the default) and records who did it, and the
    configuration after it as a revision (unless `revision` is false: the caller makes one for several changes)."""
    if revision:
        _revision_baseline()
    change = GdpConfigChange.objects.create(
        parameter=None,
        app=instance.app,
        component=instance.component,
        key=instance.key,
        vo=instance.vo,
        action="delete",
        old_value=instance.value,
        new_value="",
        user=user if user is not None and user.is_authenticated else None,
        username=_username(user),
        comment=comment,
        changed_at=timezone.now(),
    )
    instance.delete()
    if revision:
        made = gdpconfig_revision_make(
            action="delete",
            summary=f"{instance.key}{f' [{instance.vo}]' if instance.vo else ''} deleted (was {instance.value})",
            user=user,
            comment=comment,
            now=change.changed_at,
        )
        GdpConfigChange.objects.filter(pk=change.pk).update(revision=made)


def _registry_description(key: str) -> str:
    found = REGISTRY.find(key)
    return found[0].description[:256] if found else ""


def gdpconfig_profile_apply(
    *, profile: str, vo: str = "", user: AbstractBaseUser | None = None, comment: str = ""
) -> GdpConfig:
    """Makes `profile` the live one for `vo` (all VOs when empty): the PROFILE row, with its change recorded.
    Stored rows keep overriding the profile's values (gdpconfig_profile_effect lists them)."""
    if profile not in PROFILES:
        raise GdpConfigInputError("profile", f"unknown profile '{profile}' (known: {', '.join(PROFILES)})")
    return gdpconfig_save(
        key="PROFILE",
        value=profile,
        vo=vo,
        user=user,
        comment=comment or f"profile {profile} applied ({PROFILES[profile].title})",
        revision_action="profile",
    )


REVISION_FIELDS = ("app", "component", "key", "vo", "value", "type", "is_custom")


def gdpconfig_rows_snapshot() -> list[list]:
    """Every stored row as [app, component, key, vo, value, type, is_custom], sorted: a revision's content."""
    return sorted(list(row) for row in GdpConfig.objects.values_list(*REVISION_FIELDS))


def rows_digest(rows: list[list]) -> str:
    return hashlib.blake2b(json.dumps(rows, separators=(",", ":")).encode(), digest_size=16).hexdigest()


def _revision_baseline() -> None:
    """Before the first change ever recorded as a revision: the rows as they stand, so that it can be restored."""
    if not GdpConfigRevision.objects.exists():
        gdpconfig_revision_make(action="first", summary="the rows as found", user=None)


def gdpconfig_revision_make(
    *, action: str, summary: str, user: AbstractBaseUser | None, comment: str = "", now: datetime | None = None
) -> GdpConfigRevision:
    """Records the stored gdpconfig as it stands now as a revision (after a change, in the change's transaction)."""
    rows = gdpconfig_rows_snapshot()
    return GdpConfigRevision.objects.create(
        created=now or timezone.now(),
        action=action,
        summary=summary[:256],
        comment=comment[:256],
        user=user if user is not None and user.is_authenticated else None,
        username=_username(user),
        rows=rows,
        digest=rows_digest(rows),
    )


class GdpConfigNothingToRestore(GdpConfigInputError):
    """The stored gdpconfig already is the revision asked for."""

    def __init__(self, revision: int):
        super().__init__("revision", f"the stored gdpconfig already is revision {revision}: nothing to restore")


@transaction.atomic
def gdpconfig_revision_restore(
    *, revision_id: int, user: AbstractBaseUser | None = None, comment: str = ""
) -> GdpConfigRevision:
    """Makes the stored gdpconfig what it was at revision `revision_id`: rows it did not have are deleted, rows it
    had are saved with its values, each change recorded, and the result recorded as one new revision."""
    try:
        target = GdpConfigRevision.objects.get(pk=revision_id)
    except GdpConfigRevision.DoesNotExist:
        raise GdpConfigInputError("revision", f"no gdpconfig revision {revision_id}") from None
    wanted = {tuple(row[:4]): row for row in target.rows}
    current = {(row.app, row.component, row.key, row.vo): row for row in GdpConfig.objects.select_for_update()}
    if rows_digest(gdpconfig_rows_snapshot()) == target.digest:
        raise GdpConfigNothingToRestore(revision_id)
    why = comment or f"restore of revision {revision_id}"
    last_change = GdpConfigChange.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    for identity, row in sorted(current.items()):
        if identity not in wanted:
            gdpconfig_delete(instance=row, user=user, comment=why, revision=False)
    for identity, (app, component, key, vo, value, value_type, is_custom) in sorted(wanted.items()):
        gdpconfig_save(
            key=key,
            value=value,
            vo=vo,
            value_type=value_type,
            app=app,
            component=component,
            is_custom=is_custom,
            user=user,
            comment=why,
            instance=current.get(identity),
            revision_action="",
        )
    now = timezone.now()
    made = gdpconfig_revision_make(
        action="restore", summary=f"revision {revision_id} restored", user=user, comment=comment, now=now
    )
    GdpConfigChange.objects.filter(pk__gt=last_change, revision__isnull=True).update(revision=made)
    return made

"""Writing gdpconfig: validation against the registry, the row, and a change-history entry, in one transaction."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from brokerage.gdpconfig import REGISTRY, VALUE_TYPES, GdpConfigError, format_value, parse_value
from brokerage.gdpconfig.profiles import PROFILES
from brokerage.gdpconfig.registry import KEY_PATTERN
from brokerage.models import GdpConfig, GdpConfigChange


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
) -> GdpConfig:
    """Creates or updates one row (the one given, else the one with the same app/component/key/vo) and
    records the change with its author. Saving the same value again records nothing."""
    data = gdpconfig_validate(
        key=key, value=value, vo=vo, value_type=value_type, app=app, component=component, is_custom=is_custom
    )
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
        GdpConfigChange.objects.create(
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
    return instance


@transaction.atomic
def gdpconfig_delete(*, instance: GdpConfig, user: AbstractBaseUser | None = None, comment: str = "") -> None:
    """Deletes a row (its parameter falls back to the VO-less row or the default) and records who did it."""
    GdpConfigChange.objects.create(
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
    )

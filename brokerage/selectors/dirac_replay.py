"""A DIRAC matching request run again (issue 34): its scenario rebuilt from what it drew from (DiracMatchInputs and
the ScenarioParts of its day) as a `dirac_match` file with a `matcher` section, and the request replayed from it,
as it was or under another profile or other matching parameters. Read-only."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime
from typing import Any

from brokerage.engine import parse_scenario
from brokerage.engine.core.scenario import ScenarioError
from brokerage.engine.dirac.matcher import index_part_digests, index_snapshot, matcher_decision
from brokerage.engine.dirac.rules import MatchRules
from brokerage.inputs_codec import day_of, inputs_decode
from brokerage.models import DiracMatchInputs, DiracMatchRecord, ScenarioPart
from brokerage.selectors.inputs import InputsUnavailable, _remember, gdpconfig_with
from brokerage.selectors.replay import _outline_from, candidates_changed, decision_difference

PLUGIN = "dirac_match"


def _inputs(record: DiracMatchRecord) -> DiracMatchInputs:
    from django.conf import settings
    from django.utils import timezone

    inputs = DiracMatchInputs.objects.filter(record_id=record.pk).first()
    if inputs is not None:
        return inputs
    kept_since = timezone.now() - timezone.timedelta(days=settings.DECISION_TRACE_DAYS)
    if record.at < kept_since:
        raise InputsUnavailable(
            "expired",
            f"what DIRAC matching request {record.pk} drew from is kept {settings.DECISION_TRACE_DAYS} days "
            "(DECISION_TRACE_DAYS) and has expired",
        )
    raise InputsUnavailable(
        "not_kept", f"DIRAC matching request {record.pk} was stored before its inputs were kept (issue 34)"
    )


# Decoded parts of requests' indexes, by day and digest: consecutive requests share their index, its blocks and
# its priorities (bounded: a 10,000-queue index is some forty blocks).
_DECODED: OrderedDict[tuple[datetime, str], Any] = OrderedDict()
DECODED_KEPT = 512


def _parts_of_day(day: datetime, digests: set[str]) -> dict[str, Any]:
    """The parts of `day` with these digests, decoded (one query for those not decoded already)."""
    found = {digest: _DECODED[(day, digest)] for digest in digests if (day, digest) in _DECODED}
    wanted = digests - set(found)
    if wanted:
        for digest, blob in ScenarioPart.objects.filter(day=day, digest__in=list(wanted)).values_list("digest", "data"):
            found[digest] = _remember(_DECODED, (day, digest), inputs_decode(blob), DECODED_KEPT)
    return found


def dirac_match_scenario(*, record: DiracMatchRecord) -> dict[str, Any]:
    """The request as a scenario file `manage.py broker` runs to the same match: the resource as sent, the seed,
    the matching parameters and groups it ran under, and in `matcher` every task-queue index it read (by digest,
    put together from its stored parts) and its trail. InputsUnavailable says why it cannot be rebuilt (four
    queries at most: its inputs, then the parts of its day in three rounds — indexes, their blocks and
    priorities, the priorities' bases)."""
    inputs = _inputs(record)
    day = day_of(inputs.at)
    trail = inputs.trail
    index_digests = {step["index"] for step in trail.get("tries", ())}
    parts = _parts_of_day(day, {inputs.config} | index_digests)
    try:
        named = {digest for index in index_digests for digest in index_part_digests(parts[index])}
        parts.update(_parts_of_day(day, named))
        bases = {parts[digest]["base"] for digest in named if "base" in parts[digest]}
        parts.update(_parts_of_day(day, bases))
        config = parts[inputs.config]
        indexes = {digest: index_snapshot(parts[digest], parts) for digest in sorted(index_digests)}
    except KeyError as missing:
        raise InputsUnavailable(
            "expired", f"part {missing.args[0]} of DIRAC matching request {record.pk}'s inputs is no longer stored"
        ) from None
    return {
        "plugin": PLUGIN,
        "now": record.at.isoformat(),
        "seed": record.seed,
        "gdpconfig": config["gdpconfig"],
        "groups": config["groups"],
        "resource": record.sent() or {},
        "matcher": {"indexes": indexes, "tries": trail.get("tries", [])},
    }


def _stored_outcome(record: DiracMatchRecord) -> tuple[str, str | None]:
    return ("matched", str(record.job)) if record.matched else ("no_match", None)


def dirac_match_replay(
    *, record: DiracMatchRecord, profile: str | None = None, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The request run again from its stored inputs and compared with what it got (the record: matched or not,
    job, task queue). With a profile or changed matching parameters, the candidates gained and lost with the rule
    that keeps each out, the priorities moved, and the new match — unless the new draw reaches a task queue or a
    try the request never read (`undetermined` says which). InputsUnavailable says why it cannot be replayed;
    GdpConfigError names a bad override."""
    from brokerage.gdpconfig import ConfigView

    if overrides:
        ConfigView.from_flat(overrides)  # every override known and valid, or GdpConfigError naming it
    raw = dirac_match_scenario(record=record)
    as_stored = parse_scenario(raw)
    before = matcher_decision(as_stored, MatchRules.from_config(as_stored.config))
    undetermined = ""
    if profile or overrides:
        changed = parse_scenario(
            {**raw, "gdpconfig": gdpconfig_with(raw["gdpconfig"], profile=profile, overrides=overrides or {})}
        )
        rules = MatchRules.from_config(changed.config)
        try:
            after = matcher_decision(changed, rules)
        except ScenarioError as error:
            undetermined = str(error)
            after = matcher_decision(changed, rules, draw=False)
    else:
        after = before
    outcome, chosen = _stored_outcome(record)
    difference = decision_difference(
        before=_outline_from(before, details=False),
        after=_outline_from(after, details=True),
        outcomes=(outcome, after.outcome if not undetermined else "undetermined"),
        chosen=(chosen, after.chosen if not undetermined else None),
    )
    same = (
        not undetermined
        and after.outcome == outcome
        and after.chosen == chosen
        and (after.extra["taskQueue"] == record.task_queue or not record.matched)
    )
    return {
        "record": record.pk,
        "plugin": PLUGIN,
        "profile": after.profile,
        "overrides": dict(overrides or {}),
        "difference": difference,
        "identical": same and not candidates_changed(difference),
        # no trace is stored for a matching request: the replay is compared with what it got and drew
        "same_trace": same and before.extra == after.extra,
        "undetermined": undetermined,
        "message_before": _stored_message(record),
        "replayed": after.to_dict(),
    }


def _stored_message(record: DiracMatchRecord) -> str:
    if record.matched:
        return f"job {record.job} from TQ{record.task_queue}"
    return "no match" + (f" ({', '.join(record.reasons)})" if record.reasons else "")

"""Runs a stored decision, or with --dirac-match a DIRAC matching request, again on its stored inputs and compares
(issue 34). Exit status: 0 the replayed decision equals the stored one, 1 it differs (what changed is printed), 2 it
cannot be replayed (why is printed)."""

import json

from django.core.management.base import BaseCommand, CommandError

from brokerage.gdpconfig import GdpConfigError
from brokerage.gdpconfig.assignments import assignments_parse
from brokerage.gdpconfig.profiles import PROFILE_NAMES
from brokerage.models import Decision, DiracMatchRecord
from brokerage.selectors.dirac_replay import dirac_match_replay
from brokerage.selectors.inputs import InputsUnavailable
from brokerage.selectors.replay import decision_replay


class Command(BaseCommand):
    help = "Replay a stored decision on its stored inputs; exit 0 identical, 1 different, 2 cannot replay."

    def add_arguments(self, parser):
        parser.add_argument("decision", type=int, help="the decision's id (with --dirac-match: the request's)")
        parser.add_argument(
            "--dirac-match", action="store_true", help="the id is a DIRAC matching request's (/dirac/matches/<id>/)"
        )
        parser.add_argument("--cycle", type=int, help="decide over this cycle's grid side instead of its own")
        parser.add_argument("--profile", choices=PROFILE_NAMES, help="another gdpconfig profile")
        parser.add_argument(
            "--set", action="append", default=[], metavar="KEY=VALUE", dest="changes", help="a gdpconfig value"
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="print the comparison as JSON")

    def fail(self, message: str):
        raise CommandError(message, returncode=2)

    def handle(self, *args, decision: int, dirac_match: bool, cycle, profile, changes, as_json: bool, **options):
        try:
            overrides = assignments_parse(changes)
        except GdpConfigError as error:
            self.fail(f"--set {error}")
        what = f"DIRAC matching request {decision}" if dirac_match else f"decision {decision}"
        try:
            if dirac_match:
                if cycle:
                    self.fail("--cycle: a DIRAC matching request is not part of a cycle")
                record = DiracMatchRecord.objects.filter(pk=decision).first()
                if record is None:
                    self.fail(f"{what}: no such request")
                result = dirac_match_replay(record=record, profile=profile, overrides=overrides)
            else:
                stored = Decision.objects.filter(pk=decision).first()
                if stored is None:
                    self.fail(f"{what}: no such decision")
                result = decision_replay(decision=stored, cycle_id=cycle, profile=profile, overrides=overrides)
        except InputsUnavailable as why:
            self.fail(f"{what}: cannot replay ({why.code}): {why}")
        except GdpConfigError as error:
            self.fail(f"--set: {error}")
        if as_json:
            self.stdout.write(json.dumps(result, indent=2, default=str, ensure_ascii=False))
        else:
            self.stdout.write(self.describe(result))
        if not result["identical"]:
            raise CommandError(f"{what}: the replayed decision differs", returncode=1)

    def describe(self, result) -> str:
        difference = result["difference"]
        where = f"decision {result['decision']}" if "decision" in result else f"request {result['record']}"
        lines = [
            f"{where} ({result['plugin']}), replayed"
            + (f" over cycle {result['cycle']}" if "cycle" in result else "")
            + f" under profile {result['profile']}"
            + (f" with {', '.join(f'{k}={v}' for k, v in result['overrides'].items())}" if result["overrides"] else ""),
            f"stored:   {difference['outcome_before']} {difference['chosen_before'] or ''}".rstrip(),
            f"replayed: {difference['outcome_now']} {difference['chosen_now'] or ''}".rstrip(),
        ]
        if result.get("undetermined"):
            lines.append(f"  the new draw cannot be told: {result['undetermined']}")
        if result["identical"]:
            lines.append(
                "identical: same job, task queue, candidates and priorities, drawn in the same steps"
                if "record" in result
                else "identical: same outcome, choice, candidates and weights; the trace byte for byte"
            )
            return "\n".join(lines)
        for item in difference["gained"]:
            lines.append(f"  + {item['name']} (was skipped: {item['was']})")
        for item in difference["lost"]:
            lines.append(f"  - {item['name']} (now skipped: {item['code']})")
        for item in difference["weight_shifts"][:20]:
            lines.append(f"  ~ {item['name']}: weight {item['before']} → {item['now']}")
        if len(difference["weight_shifts"]) > 20:
            lines.append(f"  … {len(difference['weight_shifts']) - 20} more weight shifts")
        if not result["same_trace"] and not any(difference[k] for k in ("gained", "lost", "weight_shifts")):
            lines.append("  the trace differs in the numbers compared")
        return "\n".join(lines)

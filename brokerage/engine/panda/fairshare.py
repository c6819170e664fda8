"""CRIC fairsharepolicy: which kinds of job a queue gives a zero share (seed 000 "Zero Share").

A policy is a comma-separated list of `condition[&condition…]:share%`, conditions `type=` (processingType),
`group=` (workingGroup), `gshare=`, and `priority` comparisons (`priority>800`). Values may use shell wildcards
and `any`; the type `evgensimul` stands for evgen or simul (seeds 001/002). A job takes the share of the first
rule whose conditions all match and that names it explicitly; only when none does, the first rule made only of
`any` values applies. When the policy gives types a share and none names the job's type, the job has a zero share
("type=evgensimul:100%: only evgen or simul jobs can be assigned as others have zero shares", seeds 001/002).
No matching rule otherwise: no restriction.

`zero_share_panda` is panda-server 1.0.4's AtlasBrokerUtils.hasZeroShare instead (the `panda` profile).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

_PRIORITY = re.compile(r"^priority\s*(>=|<=|>|<|==|=)\s*(-?\d+)$")
_COMPARE = {
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "=": operator.eq,
}
FIELDS = ("type", "group", "gshare")


class FairsharePolicyError(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    conditions: tuple[tuple[str, str, str], ...]  # (field, op, value)
    share: float
    text: str

    @property
    def generic(self) -> bool:
        return all(field in FIELDS and value == "any" for field, _, value in self.conditions)


@lru_cache(maxsize=2048)
def parse_policy(text: str) -> tuple[Rule, ...]:
    rules = []
    for item in (part.strip() for part in (text or "").split(",")):
        if not item:
            continue
        condition_text, separator, share_text = item.rpartition(":")
        if not separator:
            raise FairsharePolicyError(f"fairsharepolicy rule {item!r} has no ':share%'")
        try:
            share = float(share_text.strip().rstrip("%"))
        except ValueError:
            raise FairsharePolicyError(f"fairsharepolicy rule {item!r}: share {share_text!r} is not a number") from None
        conditions = []
        for condition in condition_text.split("&"):
            condition = condition.strip()
            match = _PRIORITY.match(condition)
            if match:
                conditions.append(("priority", match.group(1), match.group(2)))
                continue
            field, equals, value = condition.partition("=")
            if not equals or field.strip() not in FIELDS:
                raise FairsharePolicyError(
                    f"fairsharepolicy condition {condition!r} is not type=, group=, gshare= or priority"
                )
            conditions.append((field.strip(), "=", value.strip()))
        rules.append(Rule(tuple(conditions), share, item))
    return tuple(rules)


# seeds 001/002: a type that names two processing types
TYPE_ALIASES = {"evgensimul": ("evgen", "simul")}


def _value_matches(field: str, actual: str, pattern: str) -> bool:
    if field == "type" and pattern in TYPE_ALIASES:
        return actual in TYPE_ALIASES[pattern]
    return fnmatchcase(actual, pattern)


def _matches(rule: Rule, values: dict[str, str], priority: int) -> bool:
    for field, op, value in rule.conditions:
        if field == "priority":
            if not _COMPARE[op](priority, int(value)):
                return False
        elif value != "any" and not _value_matches(field, values.get(field, ""), value):
            return False
    return True


def share_for(
    policy: str, *, processing_type: str, working_group: str, gshare: str, priority: int
) -> tuple[float | None, str]:
    """The job's share at the queue (None: no rule applies) and the rule that gave it."""
    values = {"type": processing_type, "group": working_group, "gshare": gshare}
    rules = parse_policy(policy)
    for rule in rules:
        if not rule.generic and _matches(rule, values, priority):
            return rule.share, rule.text
    for rule in rules:
        if rule.generic and _matches(rule, values, priority):
            return rule.share, rule.text
    typed = [
        rule for rule in rules if rule.share > 0 and any(f == "type" and v != "any" for f, _, v in rule.conditions)
    ]
    if typed:
        return (
            0.0,
            f"type {processing_type!r} is not among the types given a share ({', '.join(r.text for r in typed)})",
        )
    return None, ""


# panda-server 1.0.4 ProcessGroups.processGroups: processingType → the group hasZeroShare matches against
PROCESS_GROUPS = {
    "evgen": "evgen",
    "simul": "simul",
    "reprocessing": "reprocessing",
    "prod_test": "test",
    "validation": "test",
    "ptest": "test",
    "rc_test": "test",
    "rc_test2": "test",
    "rc_alrb": "test",
    "mcore": "mcore",
    "group": "group",
    "deriv": "deriv",
    "pile": "pile",
    "merge": "merge",
}
_PANDA_PRIORITY = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(-?\d+)\s*$")


@lru_cache(maxsize=4096)  # pure: a cycle asks the same few policies about the same few kinds of task
def zero_share_panda(
    policy: str, *, processing_type: str, working_group: str, gshare: str, priority: int, merging: bool
) -> tuple[bool, str]:
    """panda-server 1.0.4 AtlasBrokerUtils.hasZeroShare: the first comma-separated rule whose type (matched as a
    regular expression against the processing *group*), group and gshare match, and whose priority comparison
    holds (not checked for merges), decides: zero share when its share is 0. Test jobs are never zero-shared; a
    rule the real code cannot read ends the check with no restriction."""
    if not policy:
        return False, ""
    group = PROCESS_GROUPS.get(processing_type, "others")
    if group == "test":
        return False, ""
    try:
        for item in policy.split(","):
            fields = item.split(":")
            share = fields[-1]
            wanted = {"type": None, "group": None, "gshare": None}
            comparison = None
            for text in fields:
                for key in wanted:
                    if text.startswith(f"{key}="):
                        wanted[key] = text.split("=")[-1]
                if text.startswith("priority"):
                    comparison = text.replace("priority", "")
            actual = {"type": group, "group": working_group or "", "gshare": gshare}
            if any(
                pattern not in ("any", None)
                and not (key == "gshare" and gshare is None)
                and re.search(f"^{pattern.replace('*', '.*')}$", actual[key]) is None
                for key, pattern in wanted.items()
            ):
                continue
            if comparison is not None and not merging:
                match = _PANDA_PRIORITY.match(comparison)
                # the real code evaluates the text; one it cannot evaluate counts as holding
                if match and not _COMPARE.get(match.group(1), operator.ne)(priority, int(match.group(2))):
                    continue
            return share in ("0", "0%"), item
    except re.error as error:
        return False, f"unreadable policy ignored: {error}"
    return False, ""

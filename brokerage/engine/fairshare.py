"""CRIC fairsharepolicy: which kinds of job a queue gives a zero share (seed 000 "Zero Share").

A policy is a comma-separated list of `condition[&condition…]:share%`, conditions `type=` (processingType),
`group=` (workingGroup), `gshare=`, and `priority` comparisons (`priority>800`). Values may use shell wildcards
and `any`. A job takes the share of the first rule whose conditions all match and that names it explicitly;
only when none does, the first rule made only of `any` values applies. No matching rule: no restriction.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

_PRIORITY = re.compile(r"^priority\s*(>=|<=|>|<|==|=)\s*(-?\d+)$")
_COMPARE = {
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


def _matches(rule: Rule, values: dict[str, str], priority: int) -> bool:
    for field, op, value in rule.conditions:
        if field == "priority":
            if not _COMPARE[op](priority, int(value)):
                return False
        elif value != "any" and not fnmatchcase(values.get(field, ""), value):
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
    return None, ""

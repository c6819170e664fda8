"""A decision as text for people: the message, the summary the real broker logs, candidates and skips."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from brokerage.engine.core.decision import Decision
from brokerage.engine.core.reasons import explain, reason_title


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_decision(decision: Decision, *, max_listed: int = 20) -> str:
    lines = [decision.message, f"profile: {decision.profile}", ""]
    kind = decision.candidate_kind
    lines.append(f"initial {kind} candidates: {len(decision.initial)}")
    for stage in decision.stages:
        if stage.note:
            lines.append(f"  {stage.filter}: {stage.note}")
        elif stage.cut:
            percent = 100.0 * stage.cut / stage.before if stage.before else 0.0
            # the real broker's summary line: "old -> new candidates, pct% cut : <filter>"
            lines.append(f"  {stage.before} -> {stage.after} candidates, {percent:.0f}% cut : {stage.filter}")
    lines.append(f"final {kind} candidates: {len(decision.candidates)}")
    if decision.candidates:
        lines += ["", f"{'candidate':<28} {'weight':>12}  factors"]
        for candidate in decision.candidates[:max_listed]:
            marker = "*" if candidate.name == decision.chosen else " "
            factors = ", ".join(f"{k}={_number(v)}" for k, v in candidate.factors.items())
            lines.append(f"{marker}{candidate.name:<27} {candidate.weight:>12.6g}  {factors}")
    by_code: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for name, skip in decision.skipped.items():
        by_code[skip.code].append((name, skip))
    if by_code:
        lines += ["", "skipped:"]
        for code, members in sorted(by_code.items(), key=lambda item: (-len(item[1]), item[0])):
            lines.append(f"  {code} — {reason_title(code)} ({len(members)})")
            for name, skip in sorted(members)[:max_listed]:
                lines.append(f"    {name}: {explain(code, skip.detail)}")
            if len(members) > max_listed:
                lines.append(f"    … and {len(members) - max_listed} more")
    if decision.retry_after_minutes:
        lines += ["", f"retry after {decision.retry_after_minutes} minutes"]
    lines.append(f"(seed {decision.seed}, at {decision.now.isoformat().replace('+00:00', 'Z')})")
    return "\n".join(lines)

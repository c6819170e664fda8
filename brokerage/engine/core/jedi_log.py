"""A decision in JEDI's own log grammar (issue 53): the lines panda-server 1.0.4's brokers write for the same
decision, so that a site that ships and searches JEDI's brokerage logs (OpenSearch, Kibana) can put ours beside them,
and the same as one JSON record for other pipelines. Each broker's Grammar (its checks, the words of its lines) is
written beside the broker (brokerage/engine/panda/jedi_grammars.py); this module renders any of them.

The grammar (JobBrokerBase.py and AtlasProdTaskBroker.py, 1.0.4): every line begins `<jediTaskID=N> `; the broker
starts, and at each of its checks names each candidate the check removed, `  skip site=S due to … criteria=-code`,
then `N candidates passed <check>`; each kept one is `  use site=S with weight=W … criteria=+use`; then the summary

    ===== Job brokerage summary =====
    the number of initial candidates: 9
        9 ->   8 candidates,  12% cut : zero share check
    the number of final candidates: 1

(the initial count and the cut of each check that removed something, candidates counted by unified queue where the
broker counts so, the percentage rounded up; the final count of what it kept), and its last word. Our checks are
named by the real check they are part of (in the real broker's order; a check of ours the real broker has not is
named by its own name); the words between `skip site=S` and `criteria=` are our sentence with the numbers the rule
compared (reasons.explain), not the real broker's free text. The differential test compares these lines with the
real brokers' (tools/peer/jedi_log_compare.py says how they are normalised).

Pure: a Decision in, lines out; nothing here imports Django.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from brokerage.engine.core.decision import Decision
from brokerage.engine.core.reasons import explain

# The order a unified queue's pseudo-queues are scanned in, by resource type (JEDI's resource_types table, as the
# site mapper makes them: SCORE, MCORE, SCORE_HIMEM, MCORE_HIMEM), the unified queue itself last: a check's message
# for a unified queue is that of the last one it failed (msg_map[unified] is overwritten as the check scans).
RESOURCE_TYPE_ORDER = {"SCORE": 0, "MCORE": 1, "SCORE_HIMEM": 2, "MCORE_HIMEM": 3}


@dataclass(frozen=True)
class Grammar:
    """One broker's log.

    `broker`: the real broker's class (its logger's name). `checks`: the real broker's checks in its order, each with
    the filters of ours it holds. `unified`: candidates are counted by unified queue (a pseudo-queue `Q/SCORE` is the
    queue Q). `subject`: what a line names (`site`, `nucleus`). `start`, `use`, `chosen`: the first line, a kept
    candidate's and the choice's (formatted with priority; name and weight; chosen); `start` or `use` empty: no
    such lines. `bootstrap`: a kept candidate's line when its factors say it bootstraps. `kept_apart`: filters whose
    candidates are kept for something else (jumbo jobs), with their line. `aborts`: filters that in the real broker
    refuse the whole task before its checks, with the error line (formatted with the skip's numbers) that is then
    all it writes; `throttled`: the error line of a task throttled before brokerage, from the throttle's numbers
    (decision.extra["throttle"]). `per_candidate`: checks that name each candidate they remove by its own name,
    where the others name a unified queue once its last pseudo-queue is gone. `use_after_summary`: the kept
    candidates are written after the summary; `summary_when_kept` False: the summary is written only when nothing
    is kept. `done` and `failed`: the last line either way ("" for none).

    Where the real broker's log departs from one check per filter: `unlisted`, the decision's asides key holding
    candidates it never lists (it does not know them as candidates); `nested`, brokers asked at one of the checks,
    whose lines the log holds there (Nested); `loops`, two loops each written whole (Loops); `per_dataset`, lines
    that name the job set's master dataset beside the task (`<jediTaskID=N datasetID=M>`); `by_code`, (filter,
    code, check) where some of a filter's removals are another check's; `silent`, checks that write no line for
    what they remove; `quiet`, (filter, detail key, value) of removals not written either; `uncoded`, checks whose
    skip lines carry no criteria; `renamed`, (check, our code, the real criteria[, detail key, value]) where the
    real broker names a removal at that check otherwise."""

    broker: str
    title: str
    checks: tuple[tuple[str, tuple[str, ...]], ...]
    unified: bool = False
    subject: str = "site"
    start: str = "start"
    use: str = "  use {subject}={name} with weight={weight} criteria=+use"
    bootstrap: str = ""
    chosen: str = ""
    kept_apart: tuple[tuple[str, str], ...] = ()
    aborts: tuple[tuple[str, str], ...] = ()
    per_candidate: tuple[str, ...] = ()
    use_after_summary: bool = False
    done: str = "done"
    failed: str = "no candidates"
    summary_when_kept: bool = True
    unlisted: str = ""
    nested: tuple[Nested, ...] = ()
    loops: Loops | None = None
    per_dataset: bool = False
    throttled: Callable[[Mapping[str, Any]], str] | None = None
    by_code: tuple[tuple[str, str, str], ...] = ()
    silent: tuple[str, ...] = ()
    quiet: tuple[tuple[str, str, Any], ...] = ()
    uncoded: tuple[str, ...] = ()
    renamed: tuple[tuple[Any, ...], ...] = ()

    def check_of(self) -> dict[str, tuple[int, str]]:
        return {name: (position, check) for position, (check, names) in enumerate(self.checks) for name in names}


@dataclass(frozen=True)
class Loops:
    """A broker that brokers once with its data locality check and, when that keeps nothing, once more without
    (AtlasAnalJobBroker, 1.0.4): the first loop's decision is the final decision's `asides[key]` when there were two;
    each loop begins with its opening line and its summary carries `comment` (formatted with with_check)."""

    key: str
    opening: str
    opening_without: str
    comment: str
    # the first loop's late removals (the problematic queues, when that loop kept nothing else) are written at
    # `first_late[1]` instead of `first_late[0]`, with criteria `first_late[2]`
    first_late: tuple[str, str, str] | None = None
    # (check, our code, the real criteria) in the loop without the check only
    renamed_without: tuple[tuple[Any, ...], ...] = ()


@dataclass(frozen=True)
class Nested:
    """A broker asked at one of the grammar's checks with the asking broker's logger, so that its lines are in the
    log there (AtlasProdTaskBroker's job check: AtlasProdJobBroker.doBrokerage(hintForTB=True, glLog=tmpLog)):
    its decision is the asking decision's `asides[key]`, written in `grammar` between `opening` and `closing`; when
    it keeps nothing, `failed` is the asking broker's last line."""

    check: str
    key: str
    grammar: Grammar
    opening: str
    closing: str
    failed: str


@dataclass(frozen=True)
class Step:
    """One real check: the candidates before and after it, the ones it removed (name, skip) in the real scan order,
    and the candidates it removed as the real broker names them (a unified queue once its last pseudo-queue went,
    with the last one's skip)."""

    check: str
    before: int
    after: int
    removed: tuple[tuple[str, Any], ...]
    vanished: tuple[tuple[str, Any], ...] = ()

    @property
    def cut_percent(self) -> int:
        """The share removed, rounded up (add_summary_message: math.ceil)."""
        return math.ceil((self.before - self.after) * 100 / self.before) if self.before else 0


def unified_name(name: str) -> str:
    """The queue a pseudo-queue stands for (`CERN/MCORE` is CERN), as JobBrokerBase.get_unified_sites counts."""
    return name.split("/", 1)[0]


def _scan_rank(name: str) -> tuple[int, str]:
    _, _, resource_type = name.partition("/")
    if not resource_type:
        return (len(RESOURCE_TYPE_ORDER) + 1, name)
    return (RESOURCE_TYPE_ORDER.get(resource_type, len(RESOURCE_TYPE_ORDER)), name)


def steps(decision: Decision, grammar: Grammar) -> tuple[int, list[Step]]:
    """The initial count and each real check's step in the real order (our filters grouped under it), counted as the
    grammar counts (by unified queue when it unifies)."""
    name_of = unified_name if grammar.unified else (lambda name: name)
    check_of = grammar.check_of()
    # each of our stages is placed at its real check; a filter the real broker has not goes right after the check
    # the stage before it belongs to, under its own name
    placed: list[tuple[float, int, str]] = []
    position = -1.0
    for order, stage in enumerate(decision.stages):
        if stage.filter in check_of:
            position, check = float(check_of[stage.filter][0]), check_of[stage.filter][1]
        else:
            check = stage.filter
            position += 1e-3
        placed.append((position, order, check))
    filter_check = {stage.filter: check for (_, _, check), stage in zip(placed, decision.stages, strict=True)}
    # a filter some of whose codes the real broker names at another check of its own
    routed = {(name, code): check for name, code, check in grammar.by_code if name in filter_check}
    checks_at = {check: position for position, (check, _) in enumerate(grammar.checks)}
    placed += [(float(checks_at[check]), len(placed), check) for check in routed.values()]
    checks = list(dict.fromkeys(check for _, _, check in sorted(placed)))
    removed_by: dict[str, list[tuple[str, Any]]] = {check: [] for check in checks}
    listed = _listed(decision, grammar)
    # a late skip's own name (a queue dropped after the weights) has no stage: it goes to its check in the grammar
    late = {name: check for name, (_, check) in check_of.items() if name not in filter_check and check in removed_by}
    for name in listed:
        skip = decision.skipped.get(name)
        if skip is None:
            continue
        check = routed.get((skip.filter, skip.code)) or filter_check.get(skip.filter) or late.get(skip.filter)
        if check is not None:
            removed_by[check].append((name, skip))
    alive: dict[str, int] = {}
    for name in listed:
        alive[name_of(name)] = alive.get(name_of(name), 0) + 1
    initial = len(alive)
    found = []
    for check in checks:
        before = len(alive)
        vanished: dict[str, Any] = {}
        removed = (
            sorted(removed_by[check], key=lambda item: _scan_rank(item[0])) if grammar.unified else removed_by[check]
        )
        for name, skip in removed:
            unified = name_of(name)
            alive[unified] -= 1
            if not alive[unified]:
                del alive[unified]
            vanished[unified] = skip
        gone = tuple((unified, skip) for unified, skip in vanished.items() if unified not in alive)
        found.append(Step(check, before, len(alive), tuple(removed), gone))
    return initial, found


def _listed(decision: Decision, grammar: Grammar) -> tuple[str, ...]:
    """The initial candidates the real broker lists (all but the `unlisted` ones)."""
    unknown = decision.asides.get(grammar.unlisted) if grammar.unlisted else None
    if not unknown:
        return decision.initial
    return tuple(name for name in decision.initial if name not in unknown)


def jedi_lines(decision: Decision, grammar: Grammar, *, prefix: str, priority: int | None = None) -> list[str]:
    """The decision as the lines the real broker writes, each after `prefix` (`<jediTaskID=N> `)."""
    lines = []
    if grammar.start:
        # a priority the caller does not know (a task gone since) is left out rather than written as None
        lines.append(grammar.start.format(priority=priority) if priority is not None else grammar.start.split(" ")[0])
    if decision.outcome == "throttled" and grammar.throttled is not None:
        return [prefix + line for line in (*lines, grammar.throttled(decision.extra.get("throttle") or {}))]
    aborted = _abort(decision, grammar)
    if aborted is not None:
        return [prefix + line for line in (*lines, aborted)]
    if grammar.loops is None:
        lines += _body(decision, grammar, comment="")
    else:
        first = decision.asides.get(grammar.loops.key)
        loops = ((first, True), (decision, False)) if first is not None else ((decision, True),)
        for loop, with_check in loops:
            lines.append(grammar.loops.opening if with_check else grammar.loops.opening_without)
            late = grammar.loops.first_late if loop is first else None
            renamed = () if with_check else grammar.loops.renamed_without
            comment = grammar.loops.comment.format(with_check=with_check)
            lines += _body(loop, grammar, comment=comment, late=late, renamed=renamed)
    return [prefix + line for line in lines]


def _body(
    decision: Decision,
    grammar: Grammar,
    *,
    comment: str,
    late: tuple[str, str, str] | None = None,
    renamed: tuple[tuple[Any, ...], ...] = (),
) -> list[str]:
    """The lines after the start: each check's skips and count, the kept candidates, the summary, the last word.
    `late`: (check, the check written instead, criteria) for a first loop's late removals (Loops.first_late);
    `renamed`: more (check, code, criteria) for this loop (Loops.renamed_without)."""
    lines: list[str] = []
    initial, found = steps(decision, grammar)
    known = {check for check, _ in grammar.checks}
    apart = dict(grammar.kept_apart)
    nested = {asked.check: asked for asked in grammar.nested}
    # (check, code) → [(criteria, detail condition)], the conditional ones first
    criteria: dict[tuple[str, str], list[tuple[str, tuple]]] = {}
    for check, code, real, *condition in sorted((*grammar.renamed, *renamed), key=len, reverse=True):
        criteria.setdefault((check, code), []).append((real, tuple(condition)))
    if late is not None:
        check, instead, written = late
        found = [replace(step, check=instead) if step.check == check else step for step in found]
        criteria.update({(instead, skip.code): [(written, ())] for step in found for _, skip in step.removed})
        known.add(instead)
    for step in found:
        if not step.before:  # the real broker stopped when its last candidate went (the summary says where)
            break
        asked = nested.get(step.check)
        inner = decision.asides.get(asked.key) if asked is not None else None
        if inner is not None:
            lines += [asked.opening, *jedi_lines(inner, asked.grammar, prefix=""), asked.closing]
            if not inner.candidates:  # the asking broker stops there, without its summary
                return [*lines, asked.failed]
        if step.check not in grammar.silent:
            for name, skip in step.removed if step.check in grammar.per_candidate else step.vanished:
                line = _skip_line(grammar, step.check, name, skip, criteria, apart)
                if line is not None:
                    lines.append(line)
        if step.check in known or step.before != step.after:  # a check of ours the real broker has not: when it cut
            lines.append(f"{step.after} candidates passed {step.check}")
    used = [_use_line(grammar, candidate) for candidate in decision.candidates] if grammar.use else []
    if not grammar.use_after_summary:
        lines += used
    if grammar.summary_when_kept or not decision.candidates:
        lines += ["", f"===== {grammar.title} =====", *([comment] if comment else [])]
        lines.append(f"the number of initial candidates: {initial}")
        for step in found:
            if step.before and step.before != step.after:
                lines.append(
                    f"{step.before:>5} -> {step.after:>3} candidates, {step.cut_percent:>3}% cut : {step.check}"
                )
        # the final count is of what was kept, pseudo-queues each (dump_summary is given the scan list itself)
        lines += [f"the number of final candidates: {len(decision.candidates)}", ""]
    if grammar.use_after_summary:
        lines += used
    if decision.candidates and grammar.chosen and decision.chosen:
        lines.append(grammar.chosen.format(subject=grammar.subject, chosen=decision.chosen))
    last = grammar.done if decision.candidates else grammar.failed
    if last:
        lines.append(last)
    return lines


def _skip_line(grammar: Grammar, check: str, name: str, skip: Any, criteria: dict, apart: dict) -> str | None:
    """A removed candidate's line at `check` (None for a removal the real broker does not write): kept apart for
    something else, without criteria, or with the real criteria for our code (`criteria`, as _body builds it)."""
    if any(skip.filter == f and skip.detail.get(key) == value for f, key, value in grammar.quiet):
        return None
    if skip.filter in apart:  # kept for something else, not skipped
        return apart[skip.filter].format(subject=grammar.subject, name=name)
    if check in grammar.uncoded:
        return f"  skip {grammar.subject}={name} due to {_sentence(skip)}"
    code = next(
        (
            real
            for real, condition in criteria.get((check, skip.code), ())
            if not condition or skip.detail.get(condition[0]) == condition[1]
        ),
        skip.code,
    )
    return f"  skip {grammar.subject}={name} due to {_sentence(skip)} criteria=-{code}"


def _use_line(grammar: Grammar, candidate: Any) -> str:
    if grammar.bootstrap and candidate.factors.get("bootstrap"):  # weight 0: the bootstrapped queues go first
        return grammar.bootstrap.format(subject=grammar.subject, name=candidate.name)
    return grammar.use.format(subject=grammar.subject, name=candidate.name, weight=candidate.weight)


def _abort(decision: Decision, grammar: Grammar) -> str | None:
    """The real broker's error line when a filter that refuses the whole task there removed every candidate here."""
    templates = dict(grammar.aborts)
    cutting = next((stage for stage in decision.stages if stage.before != stage.after), None)
    if cutting is None or cutting.filter not in templates or cutting.after:
        return None
    skip = next(skip for skip in decision.skipped.values() if skip.filter == cutting.filter)
    try:
        return templates[cutting.filter].format(**skip.detail)
    except (KeyError, IndexError, ValueError):
        return _sentence(skip)


def _sentence(skip: Any) -> str:
    """Our sentence for the skip, with its numbers, as one line without its final full stop."""
    return " ".join(explain(skip.code, skip.detail).split()).rstrip(".")


def jedi_record(decision: Decision, grammar: Grammar, *, task_id: int, priority: int | None = None) -> dict[str, Any]:
    """The same decision as one JSON-ready record: the task, the outcome, the real checks with their counts, each
    removed candidate with its criteria and numbers, the kept ones."""
    initial, found = steps(decision, grammar)
    apart = dict(grammar.kept_apart)
    return {
        "jediTaskID": task_id,
        "currentPriority": priority,
        "plugin": decision.plugin,
        "profile": decision.profile,
        "outcome": decision.outcome,
        "chosen": decision.chosen,
        "initial": initial,
        "final": len(decision.candidates),
        "checks": [
            {"check": step.check, "before": step.before, "after": step.after, "cut_percent": step.cut_percent}
            for step in found
            if step.before != step.after
        ],
        "skipped": [
            {"name": name, "criteria": f"-{skip.code}", "check": step.check, "detail": dict(skip.detail)}
            for step in found
            for name, skip in step.removed
            if skip.filter not in apart
        ],
        "kept_apart": [
            {"name": name, "for": skip.filter} for step in found for name, skip in step.removed if skip.filter in apart
        ],
        "used": [{"name": candidate.name, "weight": candidate.weight} for candidate in decision.candidates],
        "now": decision.now.isoformat().replace("+00:00", "Z"),
        # the first loop of a broker that brokers twice (the analysis broker), as its own record
        **(
            {"first_loop": jedi_record(decision.asides[grammar.loops.key], grammar, task_id=task_id)}
            if grammar.loops is not None and decision.asides.get(grammar.loops.key) is not None
            else {}
        ),
        # the brokers asked at a check (the task broker's job check), each as its own record
        **{
            asked.check: jedi_record(decision.asides[asked.key], asked.grammar, task_id=task_id, priority=priority)
            for asked in grammar.nested
            if decision.asides.get(asked.key) is not None
        },
    }

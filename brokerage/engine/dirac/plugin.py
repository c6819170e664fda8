"""The `dirac_match` plugin: a match or a no-match explained as a Decision, over a scenario job list or, for a
stored request of the live Matcher, by replaying its draw (matcher.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from brokerage.engine.core.decision import Candidate, Decision, Skip, Stage
from brokerage.engine.core.plugin import Plugin
from brokerage.engine.core.scenario import Scenario
from brokerage.engine.dirac.matcher import matcher_decision
from brokerage.engine.dirac.rules import QUEUES_PER_TRY, SEED_RULES, Group, MatchRules, Resource, TaskQueue, match
from brokerage.engine.dirac.scenario import parse_dirac_scenario


def match_decision(
    *,
    queues: Sequence[TaskQueue],
    jobs: Mapping[int, Sequence[tuple[int, float]]],
    resource: Resource,
    scenario,
    rules: MatchRules = SEED_RULES,
    groups: Mapping[str, Group] | None = None,
) -> Decision:
    """A match as a Decision: candidates are the queues the draw was among (weight = their priority, the RAND key
    in the factors), skipped ones carry the first rule they fail and every failed rule in the detail."""
    result = match(queues, jobs, resource, scenario.seed, rules, groups)
    names = [f"TQ{tq.id}" for tq in queues]
    by_id = {tq.id: tq for tq in queues}
    skipped = {
        f"TQ{tq_id}": Skip(reasons[0][0], reasons[0][0], {"failed": [code for code, _ in reasons], **reasons[0][1]})
        for tq_id, reasons in result.rejected.items()
    }
    empty = [tq.id for tq in queues if tq.id not in result.rejected and not jobs.get(tq.id)]
    skipped.update({f"TQ{tq_id}": Skip("no_waiting_job", "waiting jobs", {}) for tq_id in empty})
    lower_cpu = [tq_id for tq_id in result.matching if tq_id not in result.top_cpu]
    skipped.update(
        {
            f"TQ{tq_id}": Skip("lower_cpu_time", "highest CPU time", {"cpuTime": by_id[tq_id].cpuTime})
            for tq_id in lower_cpu
        }
    )
    candidates = tuple(
        Candidate(
            f"TQ{tq_id}",
            by_id[tq_id].priority,
            {"cpuTime": by_id[tq_id].cpuTime, "randOverPriority": round(result.tq_keys[tq_id], 6)},
        )
        for tq_id in sorted(result.top_cpu, key=lambda i: (result.tq_keys[i], i))
    )
    stages = [
        Stage("requirements", len(queues), len(queues) - len(result.rejected)),
        Stage("waiting jobs", len(queues) - len(result.rejected), len(result.matching)),
    ]
    if rules.tq_order == "seed":
        stages.append(Stage("highest CPU time", len(result.matching), len(result.top_cpu)))
    if result.job is None and result.matching:
        message = (
            f"no match: {len(result.matching)} task queues have jobs but none came among the first "
            f"{QUEUES_PER_TRY} by RAND()/priority in {result.tries} tries"
        )
    elif result.job is None:
        counts: dict[str, int] = {}
        for reasons in result.rejected.values():
            counts[reasons[0][0]] = counts.get(reasons[0][0], 0) + 1
        detail = ", ".join(f"{n} {code}" for code, n in sorted(counts.items(), key=lambda item: -item[1]))
        message = f"no match: {len(queues)} task queues, none fits ({detail or 'no waiting job'})"
    else:
        message = (
            f"job {result.job} from TQ{result.task_queue} (user priority {result.user_priority:g}, "
            f"first {rules.jobs_per_try} by id {result.first_jobs})"
        )
    return Decision(
        plugin=scenario.plugin,
        outcome="matched" if result.job is not None else "no_match",
        chosen=str(result.job) if result.job is not None else None,
        candidates=candidates,
        skipped=skipped,
        stages=tuple(stages),
        message=message,
        retry_after_minutes=None,
        now=scenario.now,
        seed=scenario.seed,
        initial=tuple(names),
        candidate_kind="task queue",
        profile=scenario.profile,
        extra={
            "taskQueue": result.task_queue,
            "userPriority": result.user_priority,
            "firstJobs": result.first_jobs,
            "taskQueueOrder": rules.tq_order,
            "tries": result.tries,
        },
    )


class DiracMatcher(Plugin):
    """`dirac_match`: the DIRAC Matcher on a scenario of task queues, waiting jobs and one resource, under the
    profile's rules (seed 003 or DIRAC v9)."""

    name = "dirac_match"
    candidate_kind = "task queue"

    def decide(self, scenario: Scenario) -> Decision:
        rules = MatchRules.from_config(scenario.config)
        if "matcher" in scenario.extra:  # a stored request of the live matcher (issue 34: replay)
            return matcher_decision(scenario, rules)
        parsed = parse_dirac_scenario(scenario.extra, rules)
        return match_decision(
            queues=parsed.queues,
            jobs=parsed.jobs,
            resource=parsed.resource,
            scenario=scenario,
            rules=rules,
            groups=parsed.groups,
        )

    def frame(self, scenario: Scenario):
        return None

"""The words of panda-server 1.0.4's brokers' logs, for our decisions (issue 53; core/jedi_log.py renders them):
which real check each of our filters is part of, in the real broker's order, and how each broker begins, names a
kept candidate and ends. `jedi_lines(decision, task_id=…)` and `jedi_record(…)` pick the broker's grammar by the
decision's plugin; a plugin without one (DIRAC's, WMCore's) has no JEDI lines."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from brokerage.engine.core.decision import Decision
from brokerage.engine.core.jedi_log import Grammar, Nested
from brokerage.engine.core.jedi_log import jedi_lines as render_lines
from brokerage.engine.core.jedi_log import jedi_record as render_record
from brokerage.engine.panda.job_broker import JOB_CHECK_T1_WEIGHT, AtlasProdJobBroker
from brokerage.engine.panda.task_broker import JOB_CHECK_KEY, UNLISTED_KEY

# AtlasProdJobBroker.doBrokerage (1.0.4) in its order. Its temporary problems (the link check's, inactive queues,
# disk IO, storage, transferring, pilots) are noted at their checks and removed at the "temporary problem check"
# after the IO check; the caps, the network weight, the T1 weight of the weight loop and the queues beyond the ten
# best at the "final check", where the queues of a task's jumbo jobs are kept apart for them.
JOB = Grammar(
    broker="AtlasProdJobBroker",
    title="Job brokerage summary",
    unified=True,
    start="start currentPriority={priority}",
    use="  use site={name} with weight={weight} criteria=+use",
    bootstrap="  use site={name} to bootstrap (no running or queued jobs) criteria=+use",
    checks=(
        ("status check", ("queue status",)),
        ("link check", ("link blocked",)),
        ("opportunistic check", ("opportunistic queue", "high priority at nucleus")),
        ("zero share check", ("zero share",)),
        ("jumbo job check", ("jumbo queue",)),
        ("core count check", ("core count",)),
        ("SW/HW check", ("software",)),
        ("memory check", ("memory",)),
        ("disk check", ("direct access", "disk")),
        ("walltime check", ("walltime",)),
        ("network check", ("network connectivity",)),
        ("EventService check", ("event service",)),
        ("pledge check", ("work shortage",)),
        ("T1 weight check", ("t1 weight",)),
        ("max IO intensity check", ("max IO intensity",)),
        ("full chain check", ("full chain",)),
        ("IO check", ("input transfer",)),
        ("temporary problem check", tuple(sorted(AtlasProdJobBroker.TEMPORARY))),
        ("final check", (*AtlasProdJobBroker.LAST, AtlasProdJobBroker.late_stage, "best candidates")),
    ),
    kept_apart=((AtlasProdJobBroker.late_stage, "  use site={name} for jumbo jobs criteria=+usejumbo"),),
    per_candidate=("final check",),
    aborts=(
        ("unknown nucleus", "unknown nucleus {nucleus}"),
        ("input complete", "{dataset} is incomplete at any online storage"),
    ),
)

# The job broker as the task broker's job check asks it (doBrokerage(hintForTB=True), 1.0.4): no start line; its
# scan ends at the temporary problem check (the weight loop's final check is not reached) with the T1 weight of a
# bare-nucleus satellite's queues at the T1 weight check; kept queues are neither weighed nor written, and its
# summary is written only when it keeps none ("no candidates" then).
JOB_CHECK = replace(
    JOB,
    start="",
    use="",
    bootstrap="",
    done="",
    summary_when_kept=False,
    checks=tuple(
        (check, (*names, JOB_CHECK_T1_WEIGHT.name) if check == "T1 weight check" else names)
        for check, names in JOB.checks
        if check != "final check"
    ),
    kept_apart=(),
    per_candidate=(),
)

# AtlasProdTaskBroker.runImpl (1.0.4) in its order: an input without a complete copy readable over WAN ends the
# task's brokerage before its checks; the endpoint check holds our storage, space and WAN rules; the job check
# writes the job broker's own lines (JOB_CHECK) and, when that keeps no queue, "no sites can run jobs" without a
# summary; the kept nuclei are written after the summary, then the one set. A nucleus with no production queue is
# no nucleus to the real site mapper (SiteMapper.collect_nuclei_and_satellites builds them from queues), so it is
# not listed (ours skips it at the job check, "no production queue").
TASK = Grammar(
    broker="AtlasProdTaskBroker",
    title="Task brokerage summary",
    subject="nucleus",
    start="start",
    use="  use nucleus={name} weight={weight} criteria=+use",
    chosen="  set nucleus={chosen} with True criteria=+set",
    checks=(
        ("status check", ("nucleus status",)),
        ("transfer backlog check", ("transfer backlog",)),
        ("storage endpoint check", ("storage present", "disk space", "WAN read/write")),
        ("job check", ("job check",)),
        ("data check", ("data locality",)),
        ("full-chain check", ("full chain",)),
    ),
    aborts=(("input copy", "dataset={dataset} is incomplete/missing at online endpoints with read_wan=ON"),),
    use_after_summary=True,
    done="",
    unlisted=UNLISTED_KEY,
    nested=(
        Nested(
            "job check",
            JOB_CHECK_KEY,
            JOB_CHECK,
            opening="===== start for job check",
            closing="===== done for job check",
            failed="no sites can run jobs",
        ),
    ),
)

# Each grammar's lines agree with the real broker's on the differential scenarios (tools/peer/jedi_log_compare.py).
GRAMMARS: dict[str, Grammar] = {"atlas_prod_job": JOB, "atlas_prod_task": TASK}


def jedi_lines(decision: Decision, *, task_id: int, priority: int | None = None) -> list[str]:
    """The decision as the real broker of its kind writes it; [] for a plugin with no JEDI grammar."""
    grammar = GRAMMARS.get(decision.plugin)
    if grammar is None:
        return []
    return render_lines(decision, grammar, prefix=f"<jediTaskID={task_id}> ", priority=priority)


def jedi_record(decision: Decision, *, task_id: int, priority: int | None = None) -> dict[str, Any] | None:
    """The same as one JSON-ready record; None for a plugin with no JEDI grammar."""
    grammar = GRAMMARS.get(decision.plugin)
    if grammar is None:
        return None
    return render_record(decision, grammar, task_id=task_id, priority=priority)

"""The words of panda-server 1.0.4's brokers' logs, for our decisions (issue 53; core/jedi_log.py renders them):
which real check each of our filters is part of, in the real broker's order, and how each broker begins, names a
kept candidate and ends. `jedi_lines(decision, task_id=…)` and `jedi_record(…)` pick the broker's grammar by the
decision's plugin; a plugin without one (DIRAC's, WMCore's) has no JEDI lines."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from brokerage.engine.core.decision import Decision
from brokerage.engine.core.jedi_log import Grammar, Loops, Nested
from brokerage.engine.core.jedi_log import jedi_lines as render_lines
from brokerage.engine.core.jedi_log import jedi_record as render_record
from brokerage.engine.panda.analysis_broker import FIRST_LOOP_KEY, AtlasAnalJobBroker
from brokerage.engine.panda.analysis_rules import IDLE_QUEUE
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

# the production endpoint rule's codes (job_rules_data.endpoint_verdict), all "-blacklist" in the analysis broker
ENDPOINT_CODES = (
    "read_lan_blacklist",
    "write_lan_blacklist",
    "read_wan_blacklist",
    "write_wan_blacklist",
    "source_blacklist",
)


def anal_throttle_line(numbers) -> str:
    """AtlasAnalJobBroker's error line for a task throttled before brokerage (1.0.4, 186-200 and 305-330), from
    the throttle's numbers (analysis_broker.throttle_reason): the cap's name, not its value; ×2 for the queued."""
    measure, value = numbers.get("measure"), numbers.get("value")
    count = f"{value:.0f}" if isinstance(value, (int, float)) and float(value).is_integer() else f"{value}"
    caps = {
        "running": f"too many running jobs {count} > {numbers.get('key')}",
        "queued": f"too many queued jobs {count} > 2x{numbers.get('key')}",
        "runningCores": f"too many running cores {count} > {numbers.get('key')}",
        "queuedCores": f"too many queued cores {count} > 2x{numbers.get('key')}",
    }
    if measure in caps:
        return f"throttle to generate jobs due to {caps[measure]}"
    if measure == "gshareUsage":
        task_class = numbers.get("taskClass")
        if "ratio" in numbers:  # class A (and S): the intensity over the user's share of the threshold, as a percent
            threshold = f"{1.0 / (numbers['ratio'] + 2**-20):.3%}"
            task_class = "A"  # the real line names class A for S too (it counts S as A)
        else:
            threshold = f"{numbers.get('limit', 0) * 100:.0f}%"
        return (
            f"throttle to generate jobs due to gshare User Analysis > {threshold} of target and task in class "
            f"{task_class}"
        )
    return "throttle to generate jobs due to the user's global disk quota being exceeded"


# AtlasAnalJobBroker.doBrokerage (1.0.4) in its order, each loop: the input data check writes no line for the queues
# it leaves out; the VP check's lines carry no criteria; the include/exclude check comes after the pilot check; the
# problematic queues (bad jobs, the Analysis Stabilizer's), the ones whose local data is missing and those beyond
# the ten best go at the final check after the weights, a problematic one as -badsite whatever made it so. A second
# loop, without the data locality check, is written after the first when that kept nothing.
ANAL = Grammar(
    broker="AtlasAnalJobBroker",
    title="Job brokerage summary",
    unified=True,
    per_dataset=True,
    start="start",
    use="  use site={name} with weight={weight:.7f} criteria=+use",
    checks=(
        ("input data check", ("data locality",)),
        ("status check", ("queue status",)),
        ("zero share check", ("zero share",)),
        ("diskIO check", ("disk IO",)),
        ("max IO intensity check", ("max IO intensity",)),
        ("avoid VP queue check", ("virtual placement",)),
        ("CPU core check", ("core count",)),
        ("architecture check", ("architecture",)),
        ("too many closed check", ("closed jobs",)),
        ("SW/HW check", ("software",)),
        ("memory check", ("memory",)),
        ("scratch disk check", ("disk", "scratch disk")),
        ("storage space check", ("storage space", "storage endpoints")),
        ("walltime check", ("walltime",)),
        ("minimum walltime capacity check", ()),
        ("pilot activity check", ("pilots",)),
        ("include/exclude check", ("excluded sites", "included sites", "included sites (AUTO)")),
        ("preassign check", ("preassigned",)),
        ("hospital check", ("hospital",)),
        ("overload check", ("queue length",)),
        (
            "final check",
            (
                "bad jobs",
                "analysis stabilizer",
                IDLE_QUEUE,
                "local data only",
                AtlasAnalJobBroker.late_stage,
                "best candidates",
            ),
        ),
    ),
    per_candidate=("final check",),
    silent=("input data check",),
    uncoded=("avoid VP queue check", "architecture check"),
    # the pre-assigned queue gone before: the real check names no queue ("did not pass all tests")
    quiet=(("preassigned", "preassignedPassed", False),),
    by_code=(
        ("walltime", "scout_walltime", "minimum walltime capacity check"),
        ("walltime", "min_walltime", "minimum walltime capacity check"),
    ),
    # a problematic queue is -badsite at the final check whatever made it so; an endpoint blacklisted, -blacklist
    renamed=(
        ("final check", "tmp_user_problem", "badsite"),
        ("final check", "overloaded", "badsite"),
        *(("storage space check", code, "blacklist") for code in ENDPOINT_CODES),
    ),
    throttled=anal_throttle_line,
    aborts=(("input complete", "{dataset} is incomplete at online storage."),),
    loops=Loops(
        FIRST_LOOP_KEY,
        opening="!!! look for candidates WITH data locality check",
        opening_without="!!! look for candidates WITHOUT data locality check",
        comment="data locality check: {with_check}",
        # a first loop that kept only problematic queues (its locality to be ignored in the second) ends at the
        # "temp user problem check" (AtlasAnalJobBroker 1738-1755)
        first_late=("final check", "temp user problem check", "tmp_user_problem"),
        # without the check, a queue whose input endpoints are all blacklisted has no input endpoint (the site
        # mapper leaves blacklisted ones out) to hold the input it will copy: -disk ("input endpoint undefined"),
        # before the blacklist (1.0.4, 1208-1212); one that cannot read them stays -blacklist
        renamed_without=(("storage space check", "read_lan_blacklist", "disk", "endpoint", "no input endpoint"),),
    ),
)


# Each grammar's lines agree with the real broker's on the differential scenarios (tools/peer/jedi_log_compare.py).
GRAMMARS: dict[str, Grammar] = {"atlas_prod_job": JOB, "atlas_prod_task": TASK, "atlas_anal_job": ANAL}


def jedi_lines(
    decision: Decision, *, task_id: int, priority: int | None = None, dataset_id: int | None = None
) -> list[str]:
    """The decision as the real broker of its kind writes it; [] for a plugin with no JEDI grammar. `dataset_id`:
    the job set's master dataset, named by a broker whose lines name it (the analysis broker)."""
    grammar = GRAMMARS.get(decision.plugin)
    if grammar is None:
        return []
    named = f" datasetID={dataset_id}" if grammar.per_dataset and dataset_id is not None else ""
    return render_lines(decision, grammar, prefix=f"<jediTaskID={task_id}{named}> ", priority=priority)


def jedi_record(decision: Decision, *, task_id: int, priority: int | None = None) -> dict[str, Any] | None:
    """The same as one JSON-ready record; None for a plugin with no JEDI grammar."""
    grammar = GRAMMARS.get(decision.plugin)
    if grammar is None:
        return None
    return render_record(decision, grammar, task_id=task_id, priority=priority)

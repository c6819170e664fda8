"""The words of panda-server 1.0.4's brokers' logs, for our decisions (issue 53; core/jedi_log.py renders them):
which real check each of our filters is part of, in the real broker's order, and how each broker begins, names a
kept candidate and ends. `jedi_lines(decision, task_id=…)` and `jedi_record(…)` pick the broker's grammar by the
decision's plugin; a plugin without one (the task and analysis brokers', DIRAC's, WMCore's) has no JEDI lines."""

from __future__ import annotations

from typing import Any

from brokerage.engine.core.decision import Decision
from brokerage.engine.core.jedi_log import Grammar
from brokerage.engine.core.jedi_log import jedi_lines as render_lines
from brokerage.engine.core.jedi_log import jedi_record as render_record
from brokerage.engine.panda.job_broker import AtlasProdJobBroker

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

# The job broker's lines agree with the real broker's on the differential scenarios (tools/peer/jedi_log_compare.py);
# the task and analysis brokers' logs are not written in JEDI's grammar yet (docs/decisions.md says why).
GRAMMARS: dict[str, Grammar] = {"atlas_prod_job": JOB}


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

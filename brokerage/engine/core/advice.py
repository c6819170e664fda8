"""What a shifter can do about a decision: the table of actions beside the table of sentences (reasons.py), and
the rules that read a decision's skips as a whole (the input is only at a nucleus whose queues are off; every
queue without pilots) before falling back to one action per reason.

Each piece of advice carries the evidence it rests on (which candidates, which code, the numbers), so a shifter
can check it before acting. Pure: plain data in, plain data out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from brokerage.engine.core.reasons import reason_order, reason_title

# Who acts: the shifter waits, reports to a site, asks data management, changes the task, or asks an expert to
# tune gdpconfig.
WAIT, SITE, DATA, TASK, CONFIG = "wait", "site", "data", "task", "config"


@dataclass(frozen=True)
class Action:
    kind: str
    text: str


# One action per reason code: what usually clears it. Codes missing here (a filter that is the task's own
# choice, such as a core-count mismatch) are left to the composite rules and the sentences.
ACTIONS: dict[str, Action] = {
    # task brokerage (nuclei)
    "status": Action(
        SITE, "Wait for the queues or nuclei to come back online, or report them to the site if they stay off."
    ),
    "transfer_backlog": Action(WAIT, "Wait: the output transfer backlog drains by itself."),
    "space": Action(DATA, "Ask data management to free or add space on the storage, or wait for deletions."),
    "match": Action(TASK, "Check the task's software, cores and memory against what the sites offer."),
    "source_blacklist": Action(
        DATA, "Ask data management whether the storage with the input comes back, or for a replica elsewhere."
    ),
    "destination_blacklist": Action(DATA, "Ask data management when the storage is usable over WAN again."),
    "insize": Action(DATA, "Ask for a replica of the input at the nucleus you want, or wait for the transfer."),
    "innum": Action(DATA, "Ask for a replica of the input at the nucleus you want, or wait for the transfer."),
    "input_missing": Action(DATA, "Ask data management for a complete, readable copy of the input."),
    # job brokerage (queues)
    "unknown_nucleus": Action(TASK, "Reassign the task to a nucleus that has queues."),
    "link_unusable": Action(SITE, "Report the blocked network link to the site and network experts."),
    "dest_blacklisted": Action(DATA, "Ask data management when the nucleus's storage can receive over WAN again."),
    "links_full": Action(WAIT, "Wait: the link's transfer queue drains by itself."),
    "inactive": Action(SITE, "Report the queue to the site: activated jobs wait but none started for 2 hours."),
    "nopilot": Action(SITE, "Report the queues to the site: no pilot asked for a job for 3 hours."),
    "zeroshare": Action(CONFIG, "Ask an expert whether the queue's fair-share policy should give this work a share."),
    "io": Action(DATA, "Ask for a replica of the input near the queues that can run the jobs, or wait."),
    "jumbo": Action(CONFIG, "Ask the site whether the queue should take ordinary jobs too (catchall useJumboJobs)."),
    "max_io_intensity": Action(WAIT, "Wait for queues without an IO-intensity cap, or ask the site to raise it."),
    "non_local": Action(DATA, "Ask for a replica of the input at the queue's own storage, or wait."),
    "diskIO": Action(WAIT, "Wait: the queue's disk IO per core falls as its IO-heavy jobs end."),
    "cache": Action(
        TASK, "Check that the release, container or platform the task asks for is installed at the sites you expect."
    ),
    "lowmemory": Action(TASK, "Lower the task's memory request if it is too high, or wait for high-memory queues."),
    "highmemory": Action(TASK, "The queues want bigger jobs: check the task's memory request."),
    "shortwalltime": Action(TASK, "Split the jobs smaller (fewer events per job) so their walltime fits."),
    "longwalltime": Action(TASK, "Make the jobs longer (more events per job) or let them run elsewhere."),
    "min_walltime": Action(TASK, "Make the jobs longer (more events per job) or let them run elsewhere."),
    "disk": Action(TASK, "Lower the job's disk need (fewer input files per job)."),
    "transferring": Action(WAIT, "Wait: the queue's jobs finish transferring their output."),
    "nopilot_all": Action(SITE, "Report a site problem: none of the candidate queues has pilots."),
    "cap": Action(WAIT, "Wait: the queue's queued jobs start and make room."),
    "overloaded": Action(WAIT, "Wait: the overloaded queues drain."),
    "closed": Action(SITE, "Look at why the task's jobs were closed there (error summary) and report it."),
    "badsite": Action(SITE, "Look at the task's failures there (error summary) and report them to the site."),
    "excluded": Action(TASK, "Remove the queue from the task's excludedSite if it should run there."),
    "notincluded": Action(TASK, "Add the queue to the task's includedSite if it should run there."),
    "nonpreassigned": Action(TASK, "Clear the task's site if it may run elsewhere, else see why its own queue failed."),
    "hospital": Action(WAIT, "Nothing to do: hospital queues take work only when no other queue can."),
    "tmp_user_problem": Action(WAIT, "Wait: the user's queued jobs there start first."),
    "fileunavailable": Action(DATA, "Ask data management to recover the input files."),
    "low_weight": Action(WAIT, "Nothing to do: it can be chosen, others weigh more."),
    # the job throttler (brokerage/throttle.py): a work queue's new jobs held back
    "throttle_no_running_enough_queued": Action(
        SITE, "Look at the queues holding its work queue's activated jobs: if no pilot comes, report them to the site."
    ),
    "throttle_queued_over_threshold": Action(WAIT, "Wait: new jobs come as the queued ones start."),
    "throttle_too_many_defined": Action(
        CONFIG, "Ask an expert: jobs wait for job brokerage; its decisions on the jobs list say why."
    ),
    "throttle_too_many_waiting": Action(DATA, "Ask data management about the inputs the waiting jobs need."),
    "throttle_running_cap": Action(
        CONFIG, "Nothing to do unless the cap is too low: an expert may raise NRUNNINGCAP for the work queue."
    ),
    "throttle_queue_cap": Action(WAIT, "Wait: new jobs come as the queued ones start (NQUEUECAP)."),
    "throttle_priority_limit": Action(
        TASK, "Wait for the more urgent tasks, or raise this task's priority if it is as urgent."
    ),
    "throttle_share_queued_over_target": Action(WAIT, "Wait: new jobs come as the share's queued ones start."),
    "throttle_share_over_target": Action(
        WAIT,
        "Wait: its jobs resume as the share's running ones end. If the share is too small for its work, an expert "
        "may change it (the admin's what-if shows the effect first).",
    ),
    # a task's state (engine/panda/task_states.py)
    "state_throttled": Action(
        WAIT,
        "Wait: the watchdog releases the task by itself. If the main error below repeats, clear it first or abort "
        "the task: every fifth attempt throttles it longer.",
    ),
    "state_exhausted": Action(TASK, "Find the cause in the error summary, clear it, then retry the task."),
    "state_exhausted_attempts": Action(
        TASK, "Clear the cause of the failures (error summary), then retry: the failed inputs get new attempts."
    ),
    "state_exhausted_scout_cpu": Action(
        TASK, "Check the task's cpuTime against the scouts' figures; correct the definition, then retry."
    ),
    "state_exhausted_short_jobs": Action(
        TASK, "Ask the owner to make longer jobs (raise nFilesPerJob or nEventsPerJob), then retry the task."
    ),
    "state_exhausted_pending": Action(
        TASK,
        "Read why brokerage left it pending (its last decisions, below); once a nucleus or queue can take it, retry.",
    ),
    "state_failed": Action(TASK, "Nothing runs any more: if the cause is cleared, resubmit the work as a new task."),
    "state_broken": Action(TASK, "Fix the task's definition or release and submit it again: retrying repeats it."),
    "state_finished_failures": Action(
        TASK, "If the lost inputs matter, clear the cause (error summary) and retry: only the failed inputs run."
    ),
    "state_running_failing": Action(
        SITE, "Look at the error summary now, before the inputs run out of attempts and the task is throttled."
    ),
    "state_scouting": Action(WAIT, "Wait for the scouts: the rest of the jobs follow once they end."),
    "state_running_jumbo": Action(
        WAIT,
        "Wait for the jumbo jobs; with none active the jumbo watchdog kicks the task (useJumbo L) and the next job "
        "generation makes one. Co-jumbo jobs left waiting six hours go back for real ones.",
    ),
    "state_running_merging": Action(
        WAIT,
        "Wait for the merges; if a merge job fails its third attempt its jobs are cancelled and their inputs run "
        "again: look at that merge job's error.",
    ),
    "state_paused": Action(TASK, "Resume the task when the reason it was paused for is gone."),
    "state_topreprocess": Action(WAIT, "Wait: the preprocess job is made at the next job generation."),
    "state_preprocessing": Action(
        WAIT, "Wait for the preprocess job; if it fails the task is broken: look at that job's error."
    ),
    "state_aborting": Action(WAIT, "Nothing to do: it is aborted as soon as its jobs are killed."),
    "state_aborted": Action(TASK, "Nothing to do unless it was aborted by mistake: then submit it again."),
    "state_throttled_data_motion": Action(
        WAIT, "Wait: it is released once the user's waiting jobs have their input, at the latest in 120 minutes."
    ),
    "state_finishing": Action(WAIT, "Wait for its running jobs to end; it closes by itself."),
    "state_finishing_terminated": Action(
        WAIT, "Wait for its running jobs to end; retry it afterwards if the files left unprocessed are wanted."
    ),
    "state_passed": Action(WAIT, "Nothing to do: it closes at the next completion check."),
    "state_toretry": Action(WAIT, "Wait: its failed inputs are made into new jobs."),
    "state_toincexec": Action(WAIT, "Wait: the new parameters are applied at the next refining."),
    "state_rerefine": Action(WAIT, "Wait: its inputs are looked up again, then new jobs are made."),
    # whose fault the main error is
    "fault_task": Action(
        TASK,
        "Tell the task's owner: the task itself fails (release, configuration, memory or time requests); "
        "retrying as it is repeats the failure.",
    ),
    "fault_site": Action(
        SITE, "Report the error to the site of the queues named, with a failed job as an example (GGUS ticket)."
    ),
    "fault_data": Action(DATA, "Ask data management about the inputs: a replica that cannot be read or transferred."),
}


@dataclass(frozen=True)
class Advice:
    kind: str
    action: str
    evidence: str
    codes: tuple[str, ...] = field(default_factory=tuple)


def advice_unique(advice: Sequence[Advice]) -> list[Advice]:
    """Each action once, where it first comes (several reasons or states may call for the same one)."""
    seen, result = set(), []
    for item in advice:
        if item.action not in seen:
            seen.add(item.action)
            result.append(item)
    return result


def _names(members: Sequence[Mapping[str, Any]], limit: int = 4) -> str:
    names = [str(member["name"]) for member in members]
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def advise(
    *,
    plugin: str,
    outcome: str,
    skipped: Mapping[str, Mapping[str, Any]],
    n_candidates: int,
    nucleus: str = "",
) -> list[Advice]:
    """What to do about one decision. `skipped` is the trace's name → {code, detail}; `n_candidates` how many were
    considered. An assigned decision needs nothing."""
    if outcome == "assigned":
        return []
    by_code: dict[str, list[dict[str, Any]]] = {}
    for name, skip in skipped.items():
        by_code.setdefault(skip["code"], []).append({"name": name, "detail": skip.get("detail") or {}})
    total = n_candidates or len(skipped)
    advice: list[Advice] = []
    done: set[str] = set()

    # The input sits at one nucleus whose own queues are off or cannot run the jobs, and every other queue is too
    # far from it: neither waiting for the link nor retrying helps; a replica elsewhere or the queues back does.
    far = by_code.get("io", [])
    near = {code: members for code, members in by_code.items() if code != "io"}
    if far and near and len(far) + sum(len(m) for m in near.values()) >= total:
        at = f" at {nucleus}" if nucleus else ""
        states = sorted(
            {str(m["detail"].get("status") or m["detail"].get("state")) for m in near.get("status", [])} - {"None"}
        )
        why_near = "; ".join(
            f"{len(members)} {('are ' + ', '.join(states)) if code == 'status' and states else reason_title(code)}"
            f" ({_names(members)})"
            for code, members in sorted(near.items(), key=lambda item: (-len(item[1]), item[0]))
        )
        advice.append(
            Advice(
                DATA,
                f"Ask data management for a replica of the input at another nucleus, or wait for the queues{at} to "
                "come back or be able to run the jobs.",
                f"The queues near the input cannot take the jobs: {why_near}. The {len(far)} other queues are "
                f"{reason_title('io')} ({_names(far)}).",
                ("io", *sorted(near)),
            )
        )
        done |= {"io", *near}

    # Nobody has pilots: a site (or pilot factory) problem, not the task's.
    pilots = by_code.get("nopilot", [])
    if pilots and len(pilots) == total:
        advice.append(
            Advice(
                SITE,
                ACTIONS["nopilot_all"].text,
                f"All {total} candidate queues: no pilot for 3 hours ({_names(pilots)}).",
                ("nopilot",),
            )
        )
        done.add("nopilot")

    for code in reason_order({code: len(members) for code, members in by_code.items()}):
        members = by_code[code]
        if code in done:
            continue
        action = ACTIONS.get(code)
        if action is None:
            continue
        share = "All" if len(members) == total else f"{len(members)} of {total}"
        advice.append(
            Advice(action.kind, action.text, f"{share} candidates: {reason_title(code)} ({_names(members)}).", (code,))
        )
    return advice

"""Runs the real DIRAC 9.1.22 TaskQueueDB on one input, in DIRAC's own virtual environment (tools/peer/
dirac_setup.py), and prints what it decided as JSON. Not imported by the project.

DIRAC reads its database parameters, group shares, properties and CPU segments through gConfig; with no
Configuration Server, a CFG merged into the local configuration (`gConfigurationData.mergeWithLocal`) gives them.
Then, all with the real code: every job enters through `insertJob`; `recalculateTQSharesForAll` sets the
priorities; `matchAndGetTaskQueue(numQueuesToGet=0)` (the WHERE clause of matchAndGetJob without its LIMIT) gives
each resource's eligible task queues; `matchAndGetJob` draws jobs for the first few plain pilots with at least
three eligible queues, each matched job put back with `insertJob` so every draw sees the same state.

With `speed` in the input it times matchAndGetJob instead, on the `bench dirac` set: the task queues and their
requirements as given, bulk-loaded with SQL like the jobs (job n in task queue 1 + n mod Q with priority 1 + n
mod 5: insertJob for 10^6 jobs would take hours, a find query each), priorities from recalculateTQSharesForAll,
then one matchAndGetJob per resource (a matched job leaves tq_Jobs, as in production).

    python dirac_driver.py INPUT.json > OUTPUT.json
"""

from __future__ import annotations

import json
import sys
import time

MULTI_VALUE_FIELDS = ("Sites", "GridCEs", "BannedSites", "Platforms", "JobTypes", "Tags")
TABLES = ("tq_Jobs", "tq_RAM_requirements", *(f"tq_TQTo{field}" for field in MULTI_VALUE_FIELDS), "tq_TaskQueues")


def configuration(data: dict) -> str:
    groups = "\n".join(
        f"      {name}\n      {{\n        VO = {spec['vo']}\n"
        + (f"        JobShare = {spec['share']}\n" if "share" in spec else "")
        + f"        Properties = {', '.join(spec['properties'])}\n"
        f"        AllowBackgroundTQs = {'True' if spec.get('backgroundTQs') else 'False'}\n      }}"
        for name, spec in data["groups"].items()
    )
    segments = ", ".join(str(int(s)) for s in data["cpu_segments"])
    return f"""DIRAC
{{
  VirtualOrganization = {next(iter(data["groups"].values()))["vo"]}
}}
Systems
{{
  WorkloadManagement
  {{
    Databases
    {{
      TaskQueueDB
      {{
        Host = 127.0.0.1
        Port = {data["port"]}
        User = root
        Password = unused-skip-grant-tables
        DBName = TaskQueueDB
      }}
    }}
  }}
}}
Registry
{{
  Groups
  {{
{groups}
  }}
}}
Operations
{{
  Defaults
  {{
    JobScheduling
    {{
      taskQueueCPUTimeIntervals = {segments}
    }}
  }}
}}
"""


def task_queue_db(data: dict):
    from DIRAC import gLogger
    from DIRAC.ConfigurationSystem.Client.ConfigurationData import gConfigurationData
    from diraccfg import CFG

    gConfigurationData.mergeWithLocal(CFG().loadFromBuffer(configuration(data)))
    gLogger.setLevel("ERROR")
    from DIRAC.WorkloadManagementSystem.DB.TaskQueueDB import TaskQueueDB

    db = TaskQueueDB()
    for table in TABLES:  # a fresh state for every input
        db._update(f"DROP TABLE IF EXISTS {table}")
    return TaskQueueDB()


def checked(result):
    if not result["OK"]:
        raise SystemExit(f"DIRAC answered an error: {result['Message']}")
    return result["Value"]


def stored_state(db) -> dict:
    queues = {}
    for tq_id, owner, group, cpu, priority in checked(
        db._query("SELECT TQId, Owner, OwnerGroup, CPUTime, Priority FROM tq_TaskQueues")
    ):
        queues[tq_id] = {"id": tq_id, "Owner": owner, "OwnerGroup": group, "CPUTime": int(cpu), "Priority": priority}
        queues[tq_id].update({field: [] for field in MULTI_VALUE_FIELDS})
        queues[tq_id].update({"MinRAM": 0, "MaxRAM": 0})
    for field in MULTI_VALUE_FIELDS:
        for tq_id, value in checked(db._query(f"SELECT TQId, Value FROM tq_TQTo{field}")):
            queues[tq_id][field].append(value)
    for tq_id, low, high in checked(db._query("SELECT TQId, MinRAM, MaxRAM FROM tq_RAM_requirements")):
        queues[tq_id].update({"MinRAM": int(low), "MaxRAM": int(high)})
    jobs = [
        {"jobID": job, "taskQueue": tq, "priority": priority}
        for job, tq, priority in checked(db._query("SELECT JobId, TQId, Priority FROM tq_Jobs ORDER BY JobId"))
    ]
    return {"task_queues": sorted(queues.values(), key=lambda tq: tq["id"]), "jobs": jobs}


def _insert(db, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    for start in range(0, len(rows), 5000):
        chunk = rows[start : start + 5000]
        marks = ",".join(["(" + ",".join(["%s"] * len(columns)) + ")"] * len(chunk))
        checked(
            db._update(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {marks}", args=[v for r in chunk for v in r])
        )


def speed(db, data: dict) -> dict:
    """matchAndGetJob's time per request on the bulk-loaded set (see the module's docstring)."""
    queues, jobs = data["speed"]["queues"], data["speed"]["jobs"]
    started = time.perf_counter()
    _insert(
        db,
        "tq_TaskQueues",
        ("TQId", "Owner", "OwnerGroup", "VO", "CPUTime", "Priority", "Enabled"),
        [(i + 1, tq["Owner"], tq["OwnerGroup"], data["vo"], tq["CPUTime"], 1.0, 1) for i, tq in enumerate(queues)],
    )
    checked(
        db._update(
            f"INSERT INTO tq_Jobs (TQId, JobId, Priority, RealPriority) "
            f"SELECT 1 + seq % {len(queues)}, seq + 1, 1 + seq % 5, 1 + seq % 5 FROM seq_0_to_{jobs - 1}"
        )
    )
    for field in MULTI_VALUE_FIELDS:
        pairs = [(i + 1, value) for i, tq in enumerate(queues) for value in tq.get(field, ())]
        _insert(db, f"tq_TQTo{field}", ("TQId", "Value"), pairs)
    checked(db._update("ANALYZE TABLE tq_Jobs, tq_TaskQueues"))
    load_seconds = time.perf_counter() - started
    checked(db.recalculateTQSharesForAll())
    samples, matched = [], 0
    for resource in data["speed"]["resources"]:
        started = time.perf_counter()
        found = checked(db.matchAndGetJob(dict(resource)))
        samples.append((time.perf_counter() - started) * 1000)
        matched += bool(found["matchFound"])
    return {"match_ms": samples, "matched": matched, "load_seconds": load_seconds}


def main() -> None:
    with open(sys.argv[1]) as stream:
        data = json.load(stream)
    db = task_queue_db(data)
    if "speed" in data:
        json.dump(speed(db, data), sys.stdout)
        return
    definitions = data["task_queue_defs"]
    started = time.perf_counter()
    for job in data["jobs"]:
        checked(db.insertJob(job["jobID"], dict(definitions[job["def"]]), job["priority"]))
    load_seconds = time.perf_counter() - started
    checked(db.recalculateTQSharesForAll())
    state = stored_state(db)
    eligible, match_seconds = [], []
    for resource in data["resources"]:
        started = time.perf_counter()
        found = db.matchAndGetTaskQueue(dict(resource), numQueuesToGet=0)
        match_seconds.append(time.perf_counter() - started)
        # one resource's error ("Wrong conditions") is that resource's answer, not the run's end
        eligible.append(sorted(row[0] for row in found["Value"]) if found["OK"] else {"error": found["Message"]})
    by_job = {job["jobID"]: job for job in data["jobs"]}
    # draw for the first `resources` plain pilots (no Owner) with at least three eligible task queues
    picks = [
        i
        for i, found in enumerate(eligible)
        if isinstance(found, list) and len(found) >= 3 and "Owner" not in data["resources"][i]
    ]
    draws, draw_seconds = {}, []
    for index, count in ((str(i), data["draws"]["count"]) for i in picks[: data["draws"]["resources"]]):
        resource, picked = data["resources"][int(index)], []
        for _ in range(count):
            started = time.perf_counter()
            found = checked(db.matchAndGetJob(dict(resource)))
            draw_seconds.append(time.perf_counter() - started)
            if not found["matchFound"]:
                picked.append(None)
                continue
            job = by_job[found["jobId"]]
            picked.append([found["taskQueueId"], found["jobId"]])
            checked(db.insertJob(job["jobID"], dict(definitions[job["def"]]), job["priority"]))
        draws[index] = picked
    json.dump(
        {
            "state": state,
            "eligible": eligible,
            "draws": draws,
            "seconds": {"load": load_seconds, "eligible": match_seconds, "draw": draw_seconds},
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()

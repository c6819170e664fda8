"""Job splitting of seed 002: input files to job chunks, at file level or at event level.

File level ("Workflow for tasks with input datasets using file-level splitting"): consecutive files of the master
input dataset, at most nFilesPerJob per job (1 when the task sets neither limit) and, with nGBPerJob, as many
files as keep the job's disk estimate under the limit. The estimate is seed 002's ("nGBPerJob"): input size +
max(output size, 2.5 GB) + work directory size, the output size being outDiskCount (kB per MB of input, as the
scouts measure it) times the input size. A job always gets at least one file.

Event level ("Event-level splitting"): the files are cut into ranges of nEventsPerJob events, a job's range
crossing file boundaries as in the seed's figure — (File1, 0-99), (File1, 100-149)+(File2, 0-49), … — and each
(file, range) becomes one Event row. Files already partly used resume after their last assigned event.

Secondary datasets ("Dataset attributes": repeat, nosplit, manytime, cvmfs, ratio; JEDI_Datasets.MASTERID and
ATTRIBUTES): each job reads, beside its master files, files of each secondary input dataset of its task, as
panda-server 1.0.4's InputChunk.getSubChunk gives them: `ratio=N` files per master file (N × the job's master
files, rounded up when N is not whole; 1 per master file without a ratio), every file of a `nosplit` dataset in
every job, and a `repeat` dataset's files in a cycle (the next job starts after the last one's, back at the first
at the end). A secondary's files are followed like the master's (picked by the job, finished or given back with
it) unless the dataset is nosplit or repeat: JediDatasetSpec.toKeepTrack follows neither when both are set, and a
file every job reads, or read again and again, is never used up by one job (ours: either attribute alone too).
`manytime` and `cvmfs` change no split: the brokerage reads manytime datasets' complete copies only (AtlasDDMClient,
1.0.4), which the engine does for every secondary already (DATA_COMPLETE_ONLY_RULE), and CVMFS is not modelled.

Plain Python: the service reads the files and writes jobs, files and events.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

MB = 1024 * 1024
# seed 002 nGBPerJob: the output counts as at least 2.5 GB in the disk estimate
MIN_OUTPUT_MB = 2.5 * 1024


@dataclass(frozen=True)
class InputFile:
    """A master input file as the splitter sees it."""

    fileID: int
    size_bytes: int = 0
    nEvents: int | None = None


@dataclass(frozen=True)
class EventRange:
    """Events first..last (inclusive, 0-based within the file) of one file, given to one job."""

    fileID: int
    first: int
    last: int

    @property
    def count(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True)
class JobChunk:
    """The input of one job: whole files (file level) or event ranges (event level)."""

    files: tuple[int, ...]
    input_bytes: int
    n_events: int | None
    ranges: tuple[EventRange, ...] = ()
    secondary: tuple[int, ...] = ()  # secondary files the job takes (picked, followed like the master's)
    shared: tuple[int, ...] = ()  # secondary files it reads that nobody uses up (nosplit + repeat, repeat)

    @property
    def input_mb(self) -> float:
        return self.input_bytes / MB


def disk_estimate_mb(*, input_mb: float, out_disk_kb_per_mb: float, work_disk_mb: float) -> float:
    """seed 002 nGBPerJob: inputsize + max(outdisksize × inputsize / 1 MB, 2.5 GB) + workdirsize, in MB."""
    output_mb = out_disk_kb_per_mb * input_mb / 1024
    return input_mb + max(output_mb, MIN_OUTPUT_MB) + work_disk_mb


def split_files(
    files: Sequence[InputFile],
    *,
    max_jobs: int,
    files_per_job: int | None = None,
    gb_per_job: float | None = None,
    out_disk_kb_per_mb: float = 0.0,
    work_disk_mb: float = 0.0,
) -> list[JobChunk]:
    """Up to `max_jobs` chunks of consecutive files (module docstring for the limits)."""
    limit_files = files_per_job if files_per_job else (None if gb_per_job else 1)
    limit_mb = gb_per_job * 1024 if gb_per_job else None
    chunks: list[JobChunk] = []
    current: list[InputFile] = []

    def close() -> None:
        events = [f.nEvents for f in current]
        chunks.append(
            JobChunk(
                files=tuple(f.fileID for f in current),
                input_bytes=sum(f.size_bytes for f in current),
                n_events=None if any(n is None for n in events) else sum(events),
            )
        )
        current.clear()

    for file in files:
        if len(chunks) >= max_jobs:
            break
        if current:
            full_by_count = limit_files is not None and len(current) >= limit_files
            grown_mb = sum(f.size_bytes for f in current) / MB + file.size_bytes / MB
            full_by_size = limit_mb is not None and (
                disk_estimate_mb(input_mb=grown_mb, out_disk_kb_per_mb=out_disk_kb_per_mb, work_disk_mb=work_disk_mb)
                > limit_mb
            )
            if full_by_count or full_by_size:
                close()
                if len(chunks) >= max_jobs:
                    break
        current.append(file)
    if current and len(chunks) < max_jobs:
        close()
    return chunks


def split_events(
    files: Sequence[InputFile],
    *,
    events_per_job: int,
    max_jobs: int,
    used: Mapping[int, int] | None = None,
) -> list[JobChunk]:
    """Up to `max_jobs` chunks of `events_per_job` events; `used` maps a file to the events already given out
    (its next event). The last chunk may be smaller when the files run out."""
    if events_per_job <= 0:
        raise ValueError("nEventsPerJob must be positive")
    used = used or {}
    chunks: list[JobChunk] = []
    ranges: list[EventRange] = []
    sizes: dict[int, int] = {}
    wanted = events_per_job

    def close() -> None:
        file_ids = tuple(dict.fromkeys(r.fileID for r in ranges))
        chunks.append(
            JobChunk(
                files=file_ids,
                input_bytes=sum(sizes[f] for f in file_ids),
                n_events=sum(r.count for r in ranges),
                ranges=tuple(ranges),
            )
        )
        ranges.clear()

    for file in files:
        total = file.nEvents or 0
        position = used.get(file.fileID, 0)
        sizes[file.fileID] = file.size_bytes
        while position < total and len(chunks) < max_jobs:
            take = min(wanted, total - position)
            ranges.append(EventRange(file.fileID, position, position + take - 1))
            position += take
            wanted -= take
            if wanted == 0:
                close()
                wanted = events_per_job
        if len(chunks) >= max_jobs:
            break
    if ranges and len(chunks) < max_jobs:
        close()
    return chunks


def task_chunks(task: Mapping[str, Any], files: list[dict], used: Mapping[int, int], max_jobs: int) -> list[JobChunk]:
    """Up to `max_jobs` chunks of a task's usable master files (rows with fileID, fsize, nEvents, status), at event
    level when the task sets nEventsPerJob (`used`: events already given out per file), else at file level."""
    params = task["taskParams"] or {}
    events_per_job = params.get("nEventsPerJob")
    if events_per_job:
        inputs = [
            InputFile(f["fileID"], f["fsize"] or 0, f["nEvents"])
            for f in files
            if f["nEvents"] and used.get(f["fileID"], 0) < f["nEvents"]
        ]
        return split_events(inputs, events_per_job=int(events_per_job), max_jobs=max_jobs, used=used)
    ready = [InputFile(f["fileID"], f["fsize"] or 0, f["nEvents"]) for f in files if f["status"] == "ready"]
    return split_files(
        ready,
        max_jobs=max_jobs,
        files_per_job=params.get("nFilesPerJob"),
        gb_per_job=params.get("nGBPerJob"),
        out_disk_kb_per_mb=float(task["outDiskCount"] or 0)
        if not (task["outDiskUnit"] or "").endswith("PerEvent")
        else 0.0,
        work_disk_mb=float(task["workDiskCount"] or 0),
    )


def job_set_summary(chunks: list[JobChunk], *, scouts: bool, task: dict) -> dict[str, Any]:
    """The `jobs` object of the scenario: the largest job of the set (the brokerage checks that one fits); the
    jobs of a task whose outputs are merged afterwards (task parameter mergeOutput) are pre-merged jobs."""
    events = [c.n_events for c in chunks if c.n_events is not None]
    return {
        "nEvents": max(events) if events else None,
        "inputSizeMB": max(c.input_mb for c in chunks),
        "nFiles": max(len(c.files) for c in chunks),
        "isScout": scouts,
        "isPreMerged": bool((task["taskParams"] or {}).get("mergeOutput")),
        "nJobs": len(chunks),
    }


# --- random seeds (seed 002, "Random seed assignment") ---

ENDED_BADLY = ("failed", "closed", "cancelled")


@dataclass
class RandomSeeds:
    """A task's random seeds for its next jobs: "the initial value … is incremented per job. If a job used a random
    seed value and failed, the value is reused by the next job regardless of whether the old job is combined or
    split" (seed 002): the seeds given back first, lowest first, then new ones."""

    free: list[int]
    next_new: int

    def take(self) -> int:
        if self.free:
            return self.free.pop(0)
        self.next_new += 1
        return self.next_new - 1


def random_seeds(*, first: int, used: Iterable[tuple[int, str]]) -> RandomSeeds:
    """The seeds of a task whose initial value is `first`, given (seed, job status) of its jobs so far: a seed every
    job of which ended badly (failed, closed or cancelled) is free again; a new one follows the largest given."""
    every_job_ended_badly: dict[int, bool] = {}
    for seed, status in used:
        every_job_ended_badly[seed] = every_job_ended_badly.get(seed, True) and status in ENDED_BADLY
    free = sorted(seed for seed, given_back in every_job_ended_badly.items() if given_back)
    return RandomSeeds(free, max(max(every_job_ended_badly, default=first - 1) + 1, first))


@dataclass(frozen=True)
class SecondaryInput:
    """A secondary input dataset of a task: its attributes and the files jobs may read, in file order (for a
    followed dataset, the ready ones)."""

    dataset_id: int
    attributes: str
    files: tuple[InputFile, ...]

    def has(self, attribute: str) -> bool:
        return attribute in {part.strip() for part in self.attributes.split(",")}

    @property
    def ratio(self) -> float | int:
        """Files per master file (JediDatasetSpec.getRatioToMaster: `ratio=N`, 1 when unset)."""
        found = re.search(r"ratio=(\d+(\.\d+)?)", self.attributes)
        if found is None:
            return 1
        return float(found.group(1)) if found.group(2) else int(found.group(1))

    @property
    def followed(self) -> bool:
        """Whether its files are picked and end with their jobs (toKeepTrack; see the module docstring)."""
        return not (self.has("repeat") or self.has("nosplit"))


def files_by_ratio(ratio: float | int, masters: int) -> int:
    """JediDatasetSpec.getNumMultByRatio: masters × ratio, rounded up for a ratio that is not whole."""
    return masters * ratio if isinstance(ratio, int) else math.ceil(masters * ratio)


def chunks_with_secondaries(chunks: list[JobChunk], secondaries: Sequence[SecondaryInput]) -> list[JobChunk]:
    """The chunks with each secondary dataset's files added (module docstring). A chunk for which a followed
    secondary has too few files left gets those there are, as InputChunk does when a dataset runs out."""
    if not secondaries:
        return chunks
    position = {secondary.dataset_id: 0 for secondary in secondaries}
    result = []
    for chunk in chunks:
        masters = len(chunk.files) or len({r.fileID for r in chunk.ranges})
        taken: list[InputFile] = []
        shared: list[InputFile] = []
        for secondary in secondaries:
            files = secondary.files
            if secondary.has("nosplit"):
                picked = list(files)
            else:
                wanted = files_by_ratio(secondary.ratio, masters)
                start = position[secondary.dataset_id]
                picked = list(files[start : start + wanted])
                position[secondary.dataset_id] = start + len(picked)
                if secondary.has("repeat") and files:
                    position[secondary.dataset_id] %= len(files)
            (taken if secondary.followed else shared).extend(picked)
        result.append(
            replace(
                chunk,
                input_bytes=chunk.input_bytes + sum(f.size_bytes for f in (*taken, *shared)),
                secondary=tuple(f.fileID for f in taken),
                shared=tuple(f.fileID for f in shared),
            )
        )
    return result

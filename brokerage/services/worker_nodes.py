"""Worker nodes as pilots describe them (panda-server 1.0's `update_worker_node`): the host's CPU kept by site, the
queues it served, each with when a pilot last said so. Old entries go by the housekeeping (WORKER_NODE_DAYS)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.db import transaction

from brokerage.models import WorkerNode, WorkerNodeQueue

# what the host name and CPU model are cleaned of (panda-server 1.0.4 srvcore/CoreUtils.py clean_host_name and
# normalize_cpu_model): a batch slot before "@"; CERN's atlprd<N>-<x>- prefixes, not unique; clock, cache and
# marketing words, so that one CPU model is one name
SLOT = re.compile(r"@(.+)")
CERN_PREFIX = re.compile(r"^atlprd\d+-[^-]+-([^.]+\.cern\.ch)$")
CPU_NOISE = (
    re.compile(r"@\s*\d+(\.\d+)?\s*GHZ"),
    re.compile(r"\d+\s*KB"),
    re.compile(r"CORE PROCESSOR\s*\([^)]*\)"),
    re.compile(r"\b\d+-CORE\b"),
    re.compile(r"CPU|CORE|PROCESSOR|SCALABLE|\(R\)|\(TM\)"),
)


def host_name_clean(host_name: str) -> str:
    """slot1@wn.example.org is wn.example.org; atlprd55-xyz-abc.cern.ch is abc.cern.ch."""
    slot = SLOT.search(host_name)
    host_name = slot.group(1) if slot else host_name
    cern = CERN_PREFIX.match(host_name)
    return cern.group(1) if cern else host_name


def cpu_model_normalize(cpu_model: str) -> str:
    """'Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz' is 'INTEL XEON GOLD 6248'."""
    normalized = cpu_model.upper()
    for noise in CPU_NOISE:
        normalized = noise.sub("", normalized)
    return re.sub(r"\s+", " ", normalized).strip()


def worker_node_update(
    *, site: str, host_name: str, cpu_model: str, now: datetime, panda_queue: str | None = None, **measured: Any
) -> str:
    """A pilot's description of its host: the host at the site with this CPU model is seen now (added the first
    time, with what the pilot `measured`: n_logical_cpus, n_sockets, cores_per_socket, threads_per_core,
    cpu_architecture, cpu_architecture_level, clock_speed, total_memory, total_local_disk), and so is its queue.
    Returns what was done, in panda-server 1.0.4's words."""
    host = host_name_clean(host_name)
    key = {"site": site, "host_name": host, "cpu_model": cpu_model}
    with transaction.atomic():
        seen = WorkerNode.objects.filter(**key).update(last_seen=now)
        if not seen:
            columns = {field: value for field, value in measured.items() if value is not None}
            WorkerNode.objects.get_or_create(
                **key, defaults={"cpu_model_normalized": cpu_model_normalize(cpu_model), "last_seen": now, **columns}
            )
        if panda_queue:
            WorkerNodeQueue.objects.update_or_create(
                site=site, host_name=host, panda_queue=panda_queue, defaults={"last_seen": now}
            )
    return "Updated the worker node's last_seen timestamp." if seen else "Inserted new worker node."

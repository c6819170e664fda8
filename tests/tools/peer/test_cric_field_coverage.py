"""Every CRIC field and task attribute the real panda-server 1.0.4 reads is read by our engine or named with why not
(issue 49). The real source is scanned: the queue keys EntityModule.getSiteInfo reads from a CRIC record, the catchall
and `params` keys SiteSpec knows, the JediTaskSpec attributes the three ATLAS brokers and AtlasBrokerUtils call.
Each must be in tools/peer/panda_fields.py's tables; each one marked ours must be read by brokerage/engine/."""

import re
from dataclasses import fields
from pathlib import Path

import pytest

from brokerage.engine.core.scenario import JobSet, TaskSpec
from tools.peer.panda_fields import OURS, REAL_CATCHALL_READS, REAL_QUEUE_READS, REAL_TASK_READS

pytestmark = pytest.mark.peer
ENGINE = Path(__file__).resolve().parents[3] / "brokerage" / "engine"
BROKERS = (
    "pandajedi/jedibrokerage/AtlasProdJobBroker.py",
    "pandajedi/jedibrokerage/AtlasAnalJobBroker.py",
    "pandajedi/jedibrokerage/AtlasProdTaskBroker.py",
    "pandajedi/jedibrokerage/AtlasBrokerUtils.py",
)


@pytest.fixture(scope="module")
def engine_source() -> str:
    return "\n".join(path.read_text() for path in ENGINE.rglob("*.py"))


def source(peer, relative: str) -> str:
    return (Path(peer.source) / relative).read_text()


def test_every_cric_key_get_site_info_reads_is_named(real_panda):
    text = source(real_panda, "pandaserver/taskbuffer/db_proxy_mods/entity_module.py")
    start = text.index("def getSiteInfo")
    body = text[start : text.index("\n    def ", start + 1)]
    read = set(re.findall(r'queue_data(?:\.get\(|\[)"([^"]+)"', body))
    assert len(read) > 30  # the scan found the record reads
    assert read == set(REAL_QUEUE_READS), (sorted(read - set(REAL_QUEUE_READS)), sorted(set(REAL_QUEUE_READS) - read))


def test_every_catchall_and_params_key_site_spec_knows_is_named(real_panda):
    text = source(real_panda, "pandaserver/taskbuffer/SiteSpec.py")
    block = text[text.index("catchall_keys = {") : text.index("}", text.index("catchall_keys = {"))]
    known = set(re.findall(r'"([A-Za-z_]+)"', block)) | set(re.findall(r'get_extra_queue_param\("([^"]+)"\)', text))
    assert {"useJumboJobs", "per_core_attr", "max_io_intensity"} <= known
    assert known == set(REAL_CATCHALL_READS), (
        sorted(known - set(REAL_CATCHALL_READS)),
        sorted(set(REAL_CATCHALL_READS) - known),
    )


def test_every_task_attribute_the_brokers_read_is_named(real_panda):
    read = set()
    for relative in BROKERS:
        read |= set(re.findall(r"(?:taskSpec|task_spec|tmpTaskSpec)\.([a-zA-Z_]+)", source(real_panda, relative)))
    assert len(read) > 60
    assert read == set(REAL_TASK_READS), (sorted(read - set(REAL_TASK_READS)), sorted(set(REAL_TASK_READS) - read))


@pytest.mark.parametrize("table", [REAL_QUEUE_READS, REAL_CATCHALL_READS], ids=["queue", "catchall"])
def test_what_ours_reads_is_read_by_the_engine(table, engine_source):
    unread = sorted(key for key, (kind, ours) in table.items() if kind == OURS and f'"{ours}"' not in engine_source)
    assert unread == []
    assert all(why.strip() for kind, why in table.values() if kind != OURS)


def test_the_task_fields_ours_reads_are_scenario_fields_the_engine_reads(engine_source):
    scenario_fields = {f"task.{f.name}" for f in fields(TaskSpec)} | {f"jobs.{f.name}" for f in fields(JobSet)}
    for key, (kind, ours) in REAL_TASK_READS.items():
        if kind != OURS:
            continue
        section, name = ours.split(".")
        if section == "user_stats":
            assert f'"{name}"' in engine_source, key
            continue
        assert ours in scenario_fields, (key, ours)
        assert re.search(rf"\.{name}\b", engine_source), (key, ours)

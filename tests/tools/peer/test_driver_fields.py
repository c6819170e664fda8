"""The PanDA driver hides nothing (issue 33): every field of the scenario schema is either handed to the real
panda-server 1.0.4 or listed as unsupported with the reason, and a scenario that sets an unsupported field is
refused, naming it. Plain data: runs in every pass, without the real code."""

from dataclasses import fields

from brokerage.engine.core.scenario import (
    QUEUE_NUMBER_KEYS,
    QUEUE_TEXT_KEYS,
    USER_COUNT_KEYS,
    USER_QUEUE_KEYS,
    DatasetInfo,
    EndpointInfo,
    JobSet,
    NetworkLink,
    NucleusStats,
    Replica,
    SiteInfo,
    TaskSpec,
)
from tests.brokerage.test_live_parity import QUEUE_STATS_READS
from tools.peer.panda_fields import PASSED, UNSUPPORTED, refusal
from tools.peer.scenarios import anal_scenario, job_scenario, task_scenario


def schema_fields() -> set[str]:
    """Every field of the scenario schema the ATLAS brokers can be given (docs/scenario.md)."""
    found = {f"task.{f.name}" for f in fields(TaskSpec)}
    found |= {f"jobs.{f.name}" for f in fields(JobSet)}
    found |= {f"datasets.{f.name}" for f in fields(DatasetInfo) if f.name != "replicas"}
    found |= {f"datasets.replicas.{f.name}" for f in fields(Replica)}
    found |= {f"sites.{f.name}" for f in fields(SiteInfo)}
    found |= {f"ddm_endpoints.{f.name}" for f in fields(EndpointInfo)}
    found |= {f"network.{f.name}" for f in fields(NetworkLink)}
    found |= {f"nucleus_stats.{f.name}" for f in fields(NucleusStats)}
    queue_keys = {*QUEUE_NUMBER_KEYS, *QUEUE_TEXT_KEYS, "releases", "direct_access_lan", "direct_access_wan"}
    found |= {f"queues.{key}" for key in queue_keys | {"use_vp", "astorages", "params"}}
    found |= {f"queue_stats.{key}" for key in QUEUE_STATS_READS}
    found |= {f"user_stats.{who}.{key}" for who in ("user", "group") for key in (*USER_COUNT_KEYS, "diskQuotaExceeded")}
    found -= {"user_stats.group.runningSlotsHiSites"}  # a user's figure only
    found |= {"user_stats.gshareUsage", "user_stats.hoursSinceLastSuccess"}
    found |= {f"user_stats.queues.{key}" for key in USER_QUEUE_KEYS}
    return found | {"sw_tags", "gpu_summary", "gdpconfig", "now", "seed", "profile"}


def test_every_schema_field_is_passed_or_named_unsupported_with_a_reason():
    listed = set(PASSED) | set(UNSUPPORTED)
    assert not set(PASSED) & set(UNSUPPORTED)
    assert schema_fields() - listed == set(), "fields the driver neither passes nor names"
    assert listed - schema_fields() == set(), "fields listed that the schema does not have"
    assert all(reason.strip() for reason in [*PASSED.values(), *UNSUPPORTED.values()])


def test_a_scenario_setting_what_the_real_code_cannot_see_is_refused_by_name():
    scenario = job_scenario(3)
    assert refusal(scenario) == ""
    scenario["sites"]["SITE0"]["state"] = "DRAINING"
    assert refusal(scenario).startswith("sites.SITE0.state='DRAINING'")
    scenario = anal_scenario(3)
    next(iter(scenario["queue_stats"].values()))["vpOverloaded"] = True
    assert "vpOverloaded" in refusal(scenario)
    scenario = task_scenario(0)
    scenario["task"].update(parentNucleus="NUC0", parentBareNucleus="only")
    scenario["sites"]["NUC0"].pop("bareNucleus", None)
    assert refusal(scenario).startswith("task.parentBareNucleus='only'")


def test_a_task_scenario_without_queues_is_refused_when_a_stand_in_queue_would_fail_on_its_storage():
    scenario = next(s for s in map(task_scenario, range(200)) if not s.get("queues"))
    assert refusal(scenario) == ""
    endpoint = next(iter(scenario["ddm_endpoints"]))
    scenario["ddm_endpoints"][endpoint]["blacklisted"] = True
    assert refusal(scenario).startswith(f"ddm_endpoints.{endpoint}.blacklisted")


def test_the_generator_makes_no_scenario_the_driver_must_refuse():
    for generate in (job_scenario, task_scenario, anal_scenario):
        refused = [(seed, refusal(generate(seed))) for seed in range(400)]
        assert [r for r in refused if r[1]] == []

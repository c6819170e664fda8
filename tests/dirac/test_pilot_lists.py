"""Resources as real pilots send them (issue 49): lists for Site, GridCE, Platform, JobType and OwnerGroup, bans of
several values, and names compared as TaskQueueDB's tables collate them. Each rule against DIRAC 9.1.22's
TaskQueueDB.__generateTQMatchSQL (a list is an OR of its values; a ban excludes a queue listing every banned value),
over the rules function and the live index at once (they must agree: tests/dirac/test_index_parity.py)."""

import pytest

from brokerage.engine.core.scenario import ScenarioError
from brokerage.engine.dirac.matcher import TaskQueueIndex
from brokerage.engine.dirac.rules import Group, MatchRules, Resource, TaskQueue, no_match_reasons
from brokerage.engine.dirac.scenario import resource_data, resource_from_data
from brokerage.gdpconfig import ConfigView

DIRAC = MatchRules.from_config(ConfigView({}, profile="dirac"))
GROUPS = {"lhcb_prod": Group(jobSharing=True), "lhcb_user": Group()}


def tq(id, **fields):
    base = {"ownerDN": "/CN=alice", "ownerGroup": "lhcb_user", "setup": "", "cpuTime": 500}
    sets = {k: frozenset(v) for k, v in fields.items() if isinstance(v, list)}
    return TaskQueue(id=id, **{**base, **{k: v for k, v in fields.items() if k not in sets}}, **sets)


def both(queues, resource):
    """The ids the rules keep, checked equal to the live index's."""
    by_rules = [q.id for q in queues if not no_match_reasons(q, resource, DIRAC, GROUPS)]
    rows = [(q.id, q.setup, q.ownerGroup, q.ownerDN, q.cpuTime, q.priority, q.minRAM) for q in queues]
    values = [(q.id, name, v) for q in queues for name in ("sites", "gridCEs", "bannedSites", "platforms", "tags",
              "jobTypes") for v in getattr(q, name)]  # fmt: skip
    index = TaskQueueIndex("test", rows, values)
    by_index = [int(i) for i in index.ids[index.matching(resource, DIRAC, GROUPS)]]
    assert by_rules == by_index
    return by_rules


def pilot(**fields):
    return Resource(setup="", cpuTime=100_000, **fields)


def test_a_list_of_compatible_platforms_matches_any_of_them():
    # the Matcher turns DIRACPlatform x86_64-el9 into [el9, el8, el7]: a queue for el8 matches, one for aarch64 not
    queues = [tq(1, platforms=["x86_64-el8"]), tq(2, platforms=["aarch64-el9"]), tq(3)]
    assert both(queues, pilot(platform=("x86_64-el9", "x86_64-el8", "x86_64-el7"))) == [1, 3]


def test_a_list_of_sites_matches_any_and_is_banned_only_when_all_are():
    queues = [
        tq(1, sites=["LCG.RAL.uk"]),
        tq(2, bannedSites=["LCG.CERN.cern"]),
        tq(3, bannedSites=["LCG.CERN.cern", "LCG.RAL.uk"]),
    ]
    assert both(queues, pilot(site=("LCG.CERN.cern", "LCG.RAL.uk"))) == [1, 2]
    assert both(queues, pilot(site="LCG.CERN.cern")) == []


def test_a_ban_of_several_values_excludes_only_a_queue_listing_them_all():
    # BannedJobType [User, MCSimulation]: a queue for User alone stays; one for both is excluded
    queues = [tq(1, jobTypes=["User"]), tq(2, jobTypes=["User", "MCSimulation"]), tq(3)]
    assert both(queues, pilot(bannedJobTypes=frozenset({"User", "MCSimulation"}))) == [1, 3]
    assert both(queues, pilot(bannedJobTypes=frozenset({"User"}))) == [3]
    reasons = no_match_reasons(queues[1], pilot(bannedJobTypes=frozenset({"User", "MCSimulation"})), DIRAC, GROUPS)
    assert reasons == [("resource_ban", {"field": "jobTypes", "banned": ["MCSimulation", "User"]})]


def test_names_compare_as_the_database_collates_them():
    # utf8mb4 with a case-insensitive collation that ignores trailing spaces
    queues = [tq(1, tags=["gpu"]), tq(2, sites=["LCG.CERN.cern"]), tq(3, ownerGroup="LHCb_User")]
    assert both(queues, pilot(tags=frozenset({"GPU"}), site="lcg.cern.cern ", ownerGroup=("lhcb_user",))) == [1, 2, 3]


def test_a_generic_pilot_sending_its_vo_groups_takes_any_of_them():
    queues = [tq(1, ownerGroup="lhcb_prod"), tq(2, ownerGroup="lhcb_user"), tq(3, ownerGroup="lhcb_mc")]
    assert both(queues, pilot(ownerGroup=("lhcb_prod", "lhcb_user"))) == [1, 2]


def test_with_an_owner_each_group_needs_the_owner_unless_it_shares_jobs():
    # TaskQueueDB: OR over the groups of (tq.OwnerGroup = g AND tq.Owner = DN), the DN dropped for JobSharing groups
    queues = [tq(1, ownerGroup="lhcb_prod", ownerDN="/CN=bob"), tq(2, ownerDN="/CN=bob"), tq(3)]
    resource = pilot(ownerGroup=("lhcb_prod", "lhcb_user"), ownerDN="/CN=alice")
    assert both(queues, resource) == [1, 3]
    assert no_match_reasons(queues[1], resource, DIRAC, GROUPS) == [
        ("owner_dn", {"required": "/CN=bob", "offered": "/CN=alice"})
    ]


def test_a_resource_reads_names_or_lists_and_writes_them_back_the_same():
    data = {"setup": "", "cpuTime": 100, "site": ["A", "B"], "platform": "el9", "ownerGroup": ["g"]}
    resource = resource_from_data(data)
    assert (resource.site, resource.platform, resource.ownerGroup, resource.site_name) == (
        ("A", "B"),
        ("el9",),
        ("g",),
        "A",
    )
    assert resource_data(resource) == {"cpuTime": 100, "site": ["A", "B"], "platform": "el9", "ownerGroup": "g"}
    assert resource_from_data(resource_data(resource)) == resource
    with pytest.raises(ScenarioError, match=r"\$\.resource\.gridCE"):
        resource_from_data({"cpuTime": 1, "gridCE": [1]})

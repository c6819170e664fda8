"""Work queues and shares (seed 002; REFERENCE.md global shares) with worked numbers."""

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from brokerage.adapters.shares import global_share_usage
from brokerage.models import GlobalShareSnapshot, Task
from brokerage.selectors.shares import work_queue_shares
from brokerage.services.shares import global_share_snapshot_take, task_work_queue_assign
from brokerage.shares import (
    GLOBAL_SHARE_LEVEL,
    Criteria,
    CriteriaError,
    QueueRule,
    ShareNode,
    ShareState,
    distribute_shares,
    hs06_distribution,
    normalised_shares,
    parse_variables,
    share_allocations_panda,
    share_allocations_seed,
    share_usage,
    under_pledge_order,
    work_queue_for,
)
from brokerage.tasks import global_share_snapshot_task
from tests import factories

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


class TestCriteria:
    @pytest.mark.parametrize(
        ("criteria", "variables", "task", "matches"),
        [
            # seed 002's two examples
            ("processingType IN (:p1,:p2)", "p1:evgen,p2:simul", {"processingType": "simul"}, True),
            ("processingType IN (:p1,:p2)", "p1:evgen,p2:simul", {"processingType": "reco"}, False),
            ("workingGroup LIKE :p1", "p1:GP_%", {"workingGroup": "GP_Higgs"}, True),
            ("workingGroup LIKE :p1", "p1:GP_%", {"workingGroup": "AP_Top"}, False),
            ("coreCount > :p1", "p1:1", {"coreCount": 8}, True),
            ("coreCount > :p1", "p1:1", {"coreCount": 1}, False),
            (
                "processingtype = 'urgent' OR taskPriority >= 900",
                "",
                {"processingType": "x", "taskPriority": 950},
                True,
            ),
            (
                "NOT (prodSourceLabel = managed) AND coreCount <= 1",
                "",
                {"prodSourceLabel": "user", "coreCount": 1},
                True,
            ),
            ("workingGroup IS NULL", "", {"workingGroup": ""}, True),
            ("workingGroup IS NOT NULL", "", {"workingGroup": ""}, False),
            ("processingType NOT IN ('evgen')", "", {"processingType": "simul"}, True),
            ("campaign LIKE 'mc2_'", "", {"campaign": "mc23"}, True),
            ("campaign LIKE 'mc2_'", "", {"campaign": "mc231"}, False),
            ("", "", {"processingType": "anything"}, True),  # no criteria: the catch-all queue
        ],
    )
    def test_evaluation(self, criteria, variables, task, matches):
        assert Criteria.parse(criteria, variables).matches(task) is matches

    @pytest.mark.parametrize(
        ("criteria", "variables", "message"),
        [
            ("processingType IN (:p3)", "p1:evgen", "variable :p3 is not defined"),
            ("colour = red", "", "unknown task attribute 'colour'"),
            ("processingType IN ('a'", "", "expected paren at the end"),
            ("processingType = 'a'; DROP TABLE jedi_tasks", "", "cannot read ';"),
            ("processingType", "", "expected IN, LIKE, IS or a comparison"),
            ("processingType = a b", "", "unexpected 'b'"),
        ],
    )
    def test_bad_criteria_say_where(self, criteria, variables, message):
        with pytest.raises(CriteriaError, match=message):
            Criteria.parse(criteria, variables)

    def test_variables(self):
        assert parse_variables("p1:evgen, p2:simul") == {"p1": "evgen", "p2": "simul"}
        with pytest.raises(CriteriaError, match="is not name:value"):
            parse_variables("p1=evgen")


class TestMapping:
    RULES = [
        QueueRule(
            1,
            "evgensimul",
            "production",
            "atlas",
            10,
            Criteria.parse("processingType IN (:p1,:p2)", "p1:evgen,p2:simul"),
        ),
        QueueRule(2, "group", "production", "atlas", 20, Criteria.parse("workingGroup LIKE :p1", "p1:GP_%")),
        QueueRule(3, "others", "production", "atlas", 90, Criteria.parse("")),
        QueueRule(4, "user", "analysis", "atlas", 10, Criteria.parse("")),
        QueueRule(5, "old", "production", "atlas", 5, Criteria.parse(""), active=False),
        QueueRule(6, "part", "production", "atlas", 1, Criteria.parse(""), is_partition=True),
    ]

    @pytest.mark.parametrize(
        ("task", "queue"),
        [
            ({"prodSourceLabel": "managed", "processingType": "simul", "workingGroup": "GP_Higgs"}, "evgensimul"),
            ({"prodSourceLabel": "managed", "processingType": "reco", "workingGroup": "GP_Higgs"}, "group"),
            ({"prodSourceLabel": "managed", "processingType": "reco"}, "others"),
            ({"prodSourceLabel": "user", "processingType": "simul"}, "user"),
            ({"prodSourceLabel": "managed", "processingType": "simul", "vo": "cms"}, None),
        ],
    )
    def test_first_queue_by_order_wins(self, task, queue):
        rule = work_queue_for(task, self.RULES)
        assert (rule.name if rule else None) == queue


class TestShareDistribution:
    def test_unused_share_goes_to_stretchable_queues_in_proportion(self):
        # 40 stretchable + 20 stretchable active, 30 plain active, 10 idle: the idle 10 goes 2:1 to the stretchable
        shares = distribute_shares(
            [("a", 40, True, True), ("b", 20, True, True), ("c", 30, False, True), ("d", 10, False, False)]
        )
        assert shares == pytest.approx({"a": 40 + 10 * 40 / 60, "b": 20 + 10 * 20 / 60, "c": 30, "d": 0})

    def test_without_stretchable_queues_every_active_queue_takes_a_part(self):
        shares = distribute_shares([("a", 40, False, True), ("c", 20, False, True), ("d", 40, True, False)])
        assert shares == pytest.approx({"a": 40 + 40 * 40 / 60, "c": 20 + 40 * 20 / 60, "d": 0})

    def test_nothing_active(self):
        assert distribute_shares([("a", 40, True, False)]) == {"a": 0.0}


class TestGlobalShares:
    # the demo tree: WLCG Production 80 / Analysis 20; MC 16 60, Reprocessing 25, Express 15; User 80, Group 20
    NODES = [
        ShareNode("WLCG Production", 80, None),
        ShareNode("Analysis", 20, None),
        ShareNode("MC 16", 60, "WLCG Production"),
        ShareNode("Reprocessing", 25, "WLCG Production"),
        ShareNode("Express", 15, "WLCG Production"),
        ShareNode("User Analysis", 80, "Analysis"),
        ShareNode("Group Analysis", 20, "Analysis"),
    ]

    def test_normalised_values(self):
        values = normalised_shares(self.NODES)
        assert values == pytest.approx(
            {
                "WLCG Production": 80,
                "Analysis": 20,
                "MC 16": 48,
                "Reprocessing": 20,
                "Express": 12,
                "User Analysis": 16,
                "Group Analysis": 4,
            }
        )

    def test_usage(self):
        # 10,000 HS06 executing in all; MC 16 target 48 % = 4,800; it runs 6,000 → 1.25
        rows = share_usage(
            {"MC 16": 48, "User Analysis": 16, "Express": 12},
            {"MC 16": 6000, "User Analysis": 4000},
            ["MC 16", "User Analysis", "Express"],
        )
        assert rows["MC 16"] == {"executing": 6000, "target": 4800, "usage": pytest.approx(1.25)}
        assert rows["User Analysis"]["usage"] == pytest.approx(4000 / 1600)
        assert rows["Express"]["usage"] == 0

    def test_pledges_are_the_grids_executing_hs06_by_normalised_value(self):
        # 10,000 HS06 executing: MC 16 6,000, User Analysis 3,000, and 1,000 under a gshare outside the tree (it counts
        # in the grid's total all the same); MC 16's pledge 48 % = 4,800, a parent's the sum of its children's
        executing = {"MC 16": 6000, "User Analysis": 3000, "retired share": 1000}
        distribution = hs06_distribution(nodes=self.NODES, executing=executing, queued={"Express": 250})
        assert distribution["MC 16"] == {"executing": 6000, "queued": 0, "pledged": pytest.approx(4800)}
        assert distribution["Express"] == {"executing": 0, "queued": 250, "pledged": pytest.approx(1200)}
        assert distribution["WLCG Production"] == {"executing": 6000, "queued": 250, "pledged": pytest.approx(8000)}
        assert distribution["Analysis"]["pledged"] == pytest.approx(2000)

    def test_the_share_furthest_below_its_pledge_goes_first_at_each_level(self):
        # Analysis runs 3,000 of 2,000 pledged (1.5), WLCG Production 6,000 of 8,000 (0.75): production first;
        # inside it Reprocessing and Express run nothing (0) and keep the tree's order, then MC 16 (1.25);
        # inside Analysis, Group Analysis has nothing (0) before User Analysis (3,000 / 1,600)
        distribution = hs06_distribution(
            nodes=self.NODES, executing={"MC 16": 6000, "User Analysis": 3000, "retired share": 1000}, queued={}
        )
        assert under_pledge_order(nodes=self.NODES, distribution=distribution) == [
            "Reprocessing",
            "Express",
            "MC 16",
            "Group Analysis",
            "User Analysis",
        ]

    def test_a_share_without_a_pledge_goes_last_and_an_idle_grid_keeps_the_trees_order(self):
        nodes = [ShareNode("A", 50, None), ShareNode("B", 0, None), ShareNode("C", 50, None)]
        distribution = hs06_distribution(nodes=nodes, executing={"A": 100, "C": 10}, queued={})
        # A 100 / 55 ≈ 1.8, C 10 / 55 ≈ 0.18, B pledged 0 → 10⁶
        assert under_pledge_order(nodes=nodes, distribution=distribution) == ["C", "A", "B"]
        idle = hs06_distribution(nodes=nodes, executing={}, queued={"B": 5})
        assert under_pledge_order(nodes=nodes, distribution=idle) == ["A", "B", "C"]


class TestShareAllocation:
    """seed 002 "Shares" at job generation (SHARE_ALLOCATION_RULE): the demo's leaf global shares, normalised MC 16
    48, Reprocessing 20, Express 12, User Analysis 16, Group Analysis 4, with 2,000 HS06 executing."""

    @staticmethod
    def leaves(*, stretchable=(), idle=("Express", "Group Analysis"), executing=None, queued=None, waiting=None):
        """The shares, each queued job waiting for a pilot unless `waiting` says otherwise."""
        executing = executing or {"MC 16": 1320.0, "Reprocessing": 400.0, "User Analysis": 280.0}
        queued = {"Reprocessing": 50.0} if queued is None else queued
        waiting = queued if waiting is None else waiting
        values = {"MC 16": 48, "Reprocessing": 20, "Express": 12, "User Analysis": 16, "Group Analysis": 4}
        return [
            ShareState(
                name,
                value,
                name in stretchable,
                name not in idle,
                executing.get(name, 0.0),
                queued.get(name, 0.0),
                waiting.get(name, 0.0),
            )
            for name, value in values.items()
        ]

    def test_idle_shares_are_lent_to_every_busy_share_by_its_own(self):
        allocations = share_allocations_seed(level=GLOBAL_SHARE_LEVEL, queued_ratio=2.0, shares=self.leaves())
        # Express's 12 and Group Analysis's 4 are idle: 16 lent over the busy 48 + 20 + 16 = 84
        mc16, repro, analysis = allocations["MC 16"], allocations["Reprocessing"], allocations["User Analysis"]
        assert mc16.effective == pytest.approx(48 + 16 * 48 / 84)  # 57.14 %
        assert mc16.target == pytest.approx(2000 * (48 + 16 * 48 / 84) / 100)  # 1,142.9 HS06
        assert repro.target == pytest.approx(2000 * (20 + 16 * 20 / 84) / 100)  # 476.2
        assert analysis.target == pytest.approx(2000 * (16 + 16 * 16 / 84) / 100)  # 381.0
        assert allocations["Express"].target == 0
        # MC 16 runs 1,320 > 1,142.9 while Reprocessing (400 < 476.2) is below its own: held
        assert (mc16.held, repro.held, analysis.held) == ("running", "", "")
        assert mc16.message == "global share MC 16 runs 1,320 HS06 over a target of 1,143: no new jobs"
        assert repro.message == ""

    def test_a_stretchable_share_takes_the_idle_shares_first(self):
        allocations = share_allocations_seed(
            level=GLOBAL_SHARE_LEVEL,
            queued_ratio=2.0,
            shares=self.leaves(stretchable=("MC 16",), queued={"User Analysis": 30.0}),
        )
        # all 16 idle points go to MC 16: 64 % of 2,000 = 1,280 (1,320 still over); the others keep their own
        assert allocations["MC 16"].target == pytest.approx(1280)
        assert allocations["Reprocessing"].target == pytest.approx(400)
        assert allocations["User Analysis"].target == pytest.approx(320)
        # User Analysis (280 < 320) has jobs queued to take MC 16's slots: held
        assert allocations["MC 16"].held
        # Reprocessing at exactly its 400 is not over it
        assert not allocations["Reprocessing"].held

    def test_nothing_is_held_when_no_share_below_its_target_has_jobs_waiting(self):
        # Reprocessing (400 < 476.2) and User Analysis (280 < 381.0) are below their targets but have no job queued:
        # the slots MC 16 would free would stay empty, so MC 16 goes on
        allocations = share_allocations_seed(level=GLOBAL_SHARE_LEVEL, queued_ratio=2.0, shares=self.leaves(queued={}))
        assert allocations["MC 16"].executing > allocations["MC 16"].target
        assert not any(a.held for a in allocations.values())
        # Reprocessing and User Analysis idle: MC 16 takes all 100 %, 1,320 of 2,000 is not over
        idle = ("Express", "Group Analysis", "Reprocessing", "User Analysis")
        alone = share_allocations_seed(level=GLOBAL_SHARE_LEVEL, queued_ratio=2.0, shares=self.leaves(idle=idle))[
            "MC 16"
        ]
        assert (alone.effective, alone.held) == (pytest.approx(100), "")

    def test_nothing_is_held_while_the_jobs_below_their_target_wait_for_their_input_only(self):
        # Reprocessing (400 < 476.2) has 50 HS06 queued, but assigned: their input is on its way, no slot is missing
        # for them yet, so MC 16's jobs (1,320 > 1,142.9) take slots nobody else could use
        allocations = share_allocations_seed(level=GLOBAL_SHARE_LEVEL, queued_ratio=2.0, shares=self.leaves(waiting={}))
        assert not allocations["MC 16"].held
        # the first 10 HS06 of them activated (waiting for a pilot): held again
        allocations = share_allocations_seed(
            level=GLOBAL_SHARE_LEVEL, queued_ratio=2.0, shares=self.leaves(waiting={"Reprocessing": 10.0})
        )
        assert allocations["MC 16"].held == "running"

    def test_a_share_queuing_over_twice_its_target_is_held_while_another_runs_below_its_own(self):
        # MC 16 runs 1,000 of its 1,142.9 target, but has 2,400 HS06 queued, over 2 × 1,142.9 = 2,285.7, while User
        # Analysis runs 300 of its 381.0: held, so that MC 16's backlog does not fill the queues' caps
        executing = {"MC 16": 1000.0, "Reprocessing": 700.0, "User Analysis": 300.0}
        allocations = share_allocations_seed(
            level=GLOBAL_SHARE_LEVEL,
            queued_ratio=2.0,
            shares=self.leaves(executing=executing, queued={"MC 16": 2400.0}),
        )
        assert allocations["MC 16"].held == "queued"
        assert allocations["MC 16"].message == (
            "global share MC 16 holds 2,400 HS06 queued over 2 × a target of 1,143: no new jobs"
        )
        # 2,200 queued is under 2,285.7: not held
        under = share_allocations_seed(
            level=GLOBAL_SHARE_LEVEL,
            queued_ratio=2.0,
            shares=self.leaves(executing=executing, queued={"MC 16": 2200.0}),
        )
        assert under["MC 16"].held == ""
        # nothing running yet (the grid filling): every target is 0, nothing is held for its queue
        empty = share_allocations_seed(
            level=GLOBAL_SHARE_LEVEL,
            queued_ratio=2.0,
            shares=self.leaves(executing={"MC 16": 0.0}, queued={"MC 16": 99.0}),
        )
        assert not any(a.held for a in empty.values())

    def test_the_panda_profile_computes_targets_and_holds_nothing(self):
        seed = share_allocations_seed(level=GLOBAL_SHARE_LEVEL, queued_ratio=2.0, shares=self.leaves())
        panda = share_allocations_panda(level=GLOBAL_SHARE_LEVEL, queued_ratio=2.0, shares=self.leaves())
        assert {n: a.target for n, a in panda.items()} == {n: a.target for n, a in seed.items()}
        assert not any(a.held for a in panda.values())


@pytest.mark.django_db
class TestDatabase:
    def test_criteria_are_validated_on_save_naming_the_field(self, admin_client_logged):
        queue = factories.WorkQueueFactory.build(criteria="processingType IN (:p1)", variables="")
        with pytest.raises(ValidationError) as caught:
            queue.full_clean()
        assert "variable :p1 is not defined" in caught.value.message_dict["criteria"][0]
        response = admin_client_logged.post(
            reverse("admin:brokerage_workqueue_add"),
            {
                "queue_name": "bad",
                "queue_type": "production",
                "vo": "atlas",
                "queue_order": 5,
                "criteria": "colour = red",
                "variables": "",
                "status": "active",
            },
        )
        assert "unknown task attribute" in str(response.context["adminform"].form.errors["criteria"])

    def test_tasks_are_assigned_to_their_queue(self):
        evgen = factories.WorkQueueFactory(
            queue_name="evgensimul",
            queue_order=10,
            criteria="processingType IN (:p1,:p2)",
            variables="p1:evgen,p2:simul",
        )
        others = factories.WorkQueueFactory(queue_name="others", queue_order=90, criteria="")
        simul = factories.TaskFactory(processingType="simul", prodSourceLabel="managed")
        reco = factories.TaskFactory(processingType="reco", prodSourceLabel="managed")
        assert task_work_queue_assign() == {simul.pk: evgen.pk, reco.pk: others.pk}
        assert Task.objects.get(pk=simul.pk).workQueue_id == evgen.pk

    def test_effective_work_queue_shares_with_a_partition(self):
        busy = factories.WorkQueueFactory(queue_name="busy", queue_order=10, queue_share=40, stretchable=True)
        factories.WorkQueueFactory(queue_name="idle", queue_order=20, queue_share=20)
        part = factories.WorkQueueFactory(queue_name="part", queue_order=30, queue_share=40, is_partition=True)
        sub_a = factories.WorkQueueFactory(queue_name="sub_a", queue_order=31, queue_share=30, partition=part)
        factories.WorkQueueFactory(queue_name="sub_b", queue_order=32, queue_share=10, partition=part)
        factories.TaskFactory(status="running", workQueue=busy)
        factories.TaskFactory(status="running", workQueue=sub_a)
        rows = {row["queue"].queue_name: row for row in work_queue_shares()}
        # idle's 20 goes to the only stretchable active queue; the partition keeps 40, all of it to sub_a
        assert rows["busy"]["effective"] == pytest.approx(60)
        assert rows["idle"]["effective"] == 0
        assert rows["part"]["effective"] == pytest.approx(40)
        assert rows["sub_a"]["effective"] == pytest.approx(40)
        assert rows["sub_b"]["effective"] == 0

    def test_usage_from_jobs_and_snapshots(self, django_assert_max_num_queries):
        production = factories.GlobalShareFactory(name="Production", value=75)
        factories.GlobalShareFactory(name="MC", value=1, parent=production)
        factories.GlobalShareFactory(name="Analysis", value=25)
        factories.JobFactory(gshare="MC", jobStatus="running", hs06=300)
        factories.JobFactory(gshare="MC", jobStatus="sent", hs06=None, coreCount=8)  # 8 × 10 HS06
        factories.JobFactory(gshare="MC", jobStatus="activated", hs06=50)
        factories.JobFactory(gshare="Analysis", jobStatus="running", hs06=120)
        with django_assert_max_num_queries(2):
            rows = {row["share"].name: row for row in global_share_usage()}
        # executing: MC 380, Analysis 120 → total 500; targets MC 75 % = 375, Analysis 25 % = 125
        assert (rows["MC"]["executing_hs06"], rows["MC"]["queued_hs06"], rows["MC"]["target_hs06"]) == (380, 50, 375)
        assert rows["MC"]["usage"] == pytest.approx(380 / 375)
        assert rows["Analysis"]["usage"] == pytest.approx(120 / 125)
        assert not rows["Production"]["leaf"]
        taken = global_share_snapshot_take(now=NOW)
        assert len(taken) == 3
        assert GlobalShareSnapshot.objects.get(share__name="MC").usage == pytest.approx(380 / 375)
        assert global_share_snapshot_task() == 3

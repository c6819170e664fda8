"""JumboWatchDog's rules (brokerage.jumbo), both profiles, with worked numbers: the seed's enabling and disabling
(seed 002, "Jumbo job switcher"), and panda-server 1.0.4's round (tools/peer/jumbo_compare.py checks the latter
against the real code on generated rounds)."""

from brokerage.jumbo import JumboLimits, JumboTask, jumbo_jobs_asked, jumbo_round_panda, jumbo_round_seed

LIMITS = JumboLimits()  # the registry's defaults: disable under 100,000, enable over 1,000,000, 500,000 in all


def task(task_id, *, use_jumbo="", left=2_000_000, events=3_000_000, priority=400, status="running", **extra):
    values = dict(
        jediTaskID=task_id, status=status, useJumbo=use_jumbo, currentPriority=priority, site="",
        nEvents=events, nEventsDone=events - left, nFiles=100, nFilesDone=10, at_jumbo_queue=True,
        positional_events=True,
    )  # fmt: skip
    values.update(extra)
    return JumboTask(**values)


def actions(round_):
    return [(a.task_id, a.action, a.rule) for a in round_.actions]


class TestSeed:
    def test_the_eligible_task_with_most_events_left_is_enabled(self):
        # 2,000,000 and 1,500,000 events left, both over 1,000,000: the first; then 1 task of JUMBO_MAX_TASKS 1
        decided = jumbo_round_seed(tasks=[task(1, left=1_500_000), task(2, left=2_000_000)], limits=LIMITS)
        assert actions(decided) == [(2, "enable", "most_events_left")]
        (enable,) = decided.actions
        assert (enable.detail["nJumboJobs"], enable.detail["maxJumboPerSite"]) == (1, 1)
        assert (decided.tasks_with_jumbo, decided.events_to_process) == (1, 2_000_000)

    def test_it_repeats_while_tasks_and_events_are_under_their_limits(self):
        # JUMBO_MAX_TASKS 3, JUMBO_MAX_EVENTS 3,500,000: 2,000,000 (0 before), then 1,500,000 (2,000,000 < 3.5 M
        # before), then none (3,500,000 is not under 3,500,000)
        limits = JumboLimits(max_tasks=3, max_events=3_500_000)
        tasks = [task(1, left=2_000_000), task(2, left=1_500_000), task(3, left=1_200_000)]
        assert actions(jumbo_round_seed(tasks=tasks, limits=limits)) == [
            (1, "enable", "most_events_left"),
            (2, "enable", "most_events_left"),
        ]

    def test_each_criterion_keeps_a_task_out(self):
        out = [
            task(1, left=1_000_000),  # not more than JUMBO_MIN_EVENTS_ENABLE
            task(2, priority=500),  # not lower than JUMBO_MAX_CURR_PRIO
            task(3, at_jumbo_queue=False),  # no jumbo queue for its release
            task(4, positional_events=False),  # no in-file positional event numbers
            task(5, site="CERN"),  # "This machinery is disabled if the task sets the site parameter"
            task(6, use_jumbo="D"),  # already switched (off)
            task(7, status="finished"),  # not a status the watchdog reads
        ]
        assert actions(jumbo_round_seed(tasks=out, limits=LIMITS)) == []
        assert actions(jumbo_round_seed(tasks=[task(8, left=1_000_001, priority=499)], limits=LIMITS)) == [
            (8, "enable", "most_events_left")
        ]

    def test_a_task_with_few_events_left_is_disabled_and_frees_its_place(self):
        # task 1 has jumbo jobs and 99,999 events left (< 100,000): disabled; the place is free for task 2
        decided = jumbo_round_seed(tasks=[task(1, use_jumbo="R", left=99_999), task(2)], limits=LIMITS)
        assert actions(decided) == [(1, "disable", "few_events_left"), (2, "enable", "most_events_left")]
        # at 100,000 it keeps them and holds the only place
        decided = jumbo_round_seed(tasks=[task(1, use_jumbo="R", left=100_000), task(2)], limits=LIMITS)
        assert actions(decided) == [(1, "keep", "enough_events_left")]


class TestPanda:
    def test_it_never_enables_and_disables_as_the_seed(self):
        decided = jumbo_round_panda(tasks=[task(1), task(2, use_jumbo="P", left=99_999)], limits=LIMITS)
        assert (2, "disable", "few_events_left") in actions(decided)
        assert all(a.action != "enable" for a in decided.actions)

    def test_the_priority_lifts(self):
        # disabled at 400 < 500: lifted to JUMBO_PRIO_DISABLED; 150,000 of 3,000,000 events left is 5 % < 95 %, 10 of
        # 100 files done is 90 left < 500: lifted to 900 as well
        decided = jumbo_round_panda(tasks=[task(1, use_jumbo="D", left=150_000)], limits=LIMITS)
        assert [(a.rule, a.priority) for a in decided.actions] == [("jumbo_disabled", 500), ("near_the_end", 900)]
        # 2,850,000 of 3,000,000 left: 95 % is not under 95 %: no lift near the end
        decided = jumbo_round_panda(tasks=[task(1, use_jumbo="R", left=2_850_000)], limits=LIMITS)
        assert [a.rule for a in decided.actions] == ["enough_events_left", "no_active_jumbo_job"]

    def test_a_running_task_with_no_active_jumbo_job_is_kicked_and_a_task_at_900_gives_back_inputs(self):
        busy = task(1, use_jumbo="R", left=2_900_000, jumbo_jobs={"running": 1})
        idle = task(2, use_jumbo="P", left=2_900_000, jumbo_jobs={"finished": 3}, priority=900)
        decided = jumbo_round_panda(tasks=[busy, idle], limits=LIMITS)
        assert actions(decided) == [
            (1, "keep", "enough_events_left"),
            (2, "keep", "enough_events_left"),
            (2, "kick", "no_active_jumbo_job"),
            (2, "reset", "high_priority"),
        ]
        assert (decided.tasks_with_jumbo, decided.total_events, decided.events_to_process) == (2, 6_000_000, 5_800_000)


def test_the_jumbo_jobs_a_task_asks_for():
    assert jumbo_jobs_asked(use_jumbo="W", params={"nJumboJobs": 3}, site="") == 3
    assert jumbo_jobs_asked(use_jumbo="L", params={"nJumboJobs": 3}, site="") == 3
    assert jumbo_jobs_asked(use_jumbo="D", params={"nJumboJobs": 3}, site="") == 0
    assert jumbo_jobs_asked(use_jumbo="W", params={"nJumboJobs": 3}, site="CERN") == 0
    assert jumbo_jobs_asked(use_jumbo="W", params={}, site="") == 0

"""A few hundred varied queues: every skip has its code, filter and numbers, the text reads, the trace stores."""

from brokerage.engine import parse_scenario, trace_decode, trace_encode
from brokerage.engine.core import reasons
from brokerage.engine.core.report import format_decision
from brokerage.engine.panda.job_broker import AtlasProdJobBroker
from brokerage.engine.panda.synthetic import job_brokerage_scenario


def test_a_varied_grid_gives_a_readable_complete_trace():
    broker = AtlasProdJobBroker()
    scenario = parse_scenario(job_brokerage_scenario(queues=400, seed=4))
    decision = broker.decide(scenario)
    # unified queues are brokered as their pseudo-queues (seed 000): every candidate is accounted for
    assert len(decision.skipped) + len(decision.candidates) == len(decision.initial) > 400
    assert len({skip.code for skip in decision.skipped.values()}) >= 8
    for name, skip in decision.skipped.items():
        sentence = reasons.explain(skip.code, skip.detail)
        # every code the job broker uses has a sentence with its numbers, and the detail fills it
        assert sentence != reasons.REASONS[skip.code].sentence, (name, skip)
    text = format_decision(decision)
    assert text.startswith(decision.message)
    assert "candidates, " in text
    assert "% cut : " in text
    # per-filter stage counts add up like the real broker's summary
    cut = sum(stage.before - stage.after for stage in decision.stages)
    assert cut == len(decision.skipped)


def test_job_traces_round_trip_with_the_cycle_frame():
    broker = AtlasProdJobBroker()
    scenario = parse_scenario(job_brokerage_scenario(queues=300, seed=9))
    frame = broker.frame(scenario)
    decision = broker.decide(scenario)
    framed = trace_encode(decision, frame=frame)
    assert len(framed) < len(trace_encode(decision))
    back = trace_decode(framed, frame=frame)
    assert back["skipped"] == {
        name: {"code": s.code, "filter": s.filter, "detail": dict(sorted(s.detail.items()))}
        for name, s in decision.skipped.items()
    }

"""Stored traces: compact encoding that decodes back to every candidate's fate, with or without a frame."""

import pytest

from brokerage.engine import FrameMissing, parse_scenario, trace_decode, trace_encode
from brokerage.engine.panda.synthetic import task_brokerage_scenario
from brokerage.engine.panda.task_broker import AtlasProdTaskBroker


def normalised(decision_dict):
    return {
        "candidates": [
            {
                "name": c["name"],
                "weight": pytest.approx(c["weight"], rel=1e-5),
                "factors": dict(sorted(c["factors"].items())),
            }
            for c in decision_dict["candidates"]
        ],
        "skipped": {k: {**v, "detail": dict(sorted(v["detail"].items()))} for k, v in decision_dict["skipped"].items()},
        "stages": decision_dict["stages"],
    }


@pytest.mark.parametrize("task_seed", [1, 2, 3])
def test_round_trip_with_and_without_frame(task_seed):
    broker = AtlasProdTaskBroker()
    frame = broker.frame(parse_scenario(task_brokerage_scenario(nuclei=60, seed=60, task_seed=0)))
    decision = broker.decide(parse_scenario(task_brokerage_scenario(nuclei=60, seed=60, task_seed=task_seed)))
    expected = normalised(decision.to_dict())
    for blob, used in ((trace_encode(decision), None), (trace_encode(decision, frame=frame), frame)):
        back = trace_decode(blob, frame=used)
        assert back["initial"] == list(decision.initial)
        assert normalised(back) == expected


def test_framed_trace_is_smaller_and_needs_its_frame():
    broker = AtlasProdTaskBroker()
    scenario = parse_scenario(task_brokerage_scenario(nuclei=300, seed=5, task_seed=1))
    frame = broker.frame(scenario)
    decision = broker.decide(scenario)
    framed, plain = trace_encode(decision, frame=frame), trace_encode(decision)
    assert len(framed) < len(plain) / 2
    with pytest.raises(FrameMissing):
        trace_decode(framed)
    other = broker.frame(parse_scenario(task_brokerage_scenario(nuclei=300, seed=6, task_seed=1)))
    with pytest.raises(FrameMissing):
        trace_decode(framed, frame=other)


def test_values_that_differ_from_the_frame_are_kept():
    # the frame was taken before a nucleus's space changed: the trace must carry the new numbers itself
    broker = AtlasProdTaskBroker()
    data = task_brokerage_scenario(nuclei=40, seed=9, task_seed=1)
    frame = broker.frame(parse_scenario(data))
    for endpoint in data["ddm_endpoints"].values():
        endpoint["space_free"] = 10.0  # everyone is now short of space
    decision = broker.decide(parse_scenario(data))
    back = trace_decode(trace_encode(decision, frame=frame), frame=frame)
    assert normalised(back) == normalised(decision.to_dict())
    assert any(skip["detail"].get("spaceFree") == 10.0 for skip in back["skipped"].values())

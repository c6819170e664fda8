"""The documented JSON Schema agrees with the parser on the example and on bad inputs."""

import json
from pathlib import Path

import jsonschema
import pytest

from brokerage.engine import ScenarioError, parse_scenario
from tests.engine.builders import nucleus, task_scenario

DOCS = Path(__file__).resolve().parents[3] / "docs"
SCHEMA = json.loads((DOCS / "scenario.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def test_schema_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", sorted((DOCS / "examples").glob("*.json")), ids=lambda p: p.name)
def test_documented_examples_pass_both(path):
    data = json.loads(path.read_text())
    VALIDATOR.validate(data)
    parse_scenario(data)


def test_builders_pass_both():
    data = task_scenario(nucleus("A"), nucleus("B", state="DISABLED"))
    VALIDATOR.validate(data)
    parse_scenario(data)


@pytest.mark.parametrize(
    "patch",
    [
        {"seed": "7"},
        {"task": {"fullChain": "always"}},
        {"datasets": [{"name": "d", "sizeGB": -1}]},
        {"sites": {"A": {"role": "hub"}}},
        {"network": [{"src": "A", "dst": "B", "closeness": 12}]},
        {"queues": {"CERN": {"status": "up"}}},
        {"ddm_endpoints": {"X": {"detailed_status": {"read_wan": "maybe"}}}},
    ],
)
def test_bad_inputs_fail_both(patch):
    data = {**task_scenario(nucleus("A")), **patch}
    assert list(VALIDATOR.iter_errors(data))
    with pytest.raises(ScenarioError):
        parse_scenario(data)

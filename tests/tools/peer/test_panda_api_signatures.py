"""Our PanDA API methods against the real panda-server 1.0.4's (issue 53): for every path we serve under
`/api/v1/<module>/<method>`, the real module's function of that name (pandaserver/api/v1/<module>_api.py, read from
the source the differential tests fetch) takes exactly our parameter names, requires the ones we require, has our
defaults, and our conversion fits its annotation. A parameter we do not accept, or spell differently, fails here."""

from __future__ import annotations

import ast

import pytest

from monitor.panda_api import pilot, views
from tools.peer.setup import PeerUnavailable, peer_ready

pytestmark = pytest.mark.peer

# the real annotation (as written) → our Parameter's kind and element
KINDS = {
    "int": (int, None),
    "str": (str, None),
    "bool": (bool, None),
    "float": (float, None),
    "int | float": (float, None),
    "float | int": (float, None),
    "dict": (dict, None),
    "dict | str": (dict, None),
    "Dict | str": (dict, None),
    "List[int]": (list, int),
    "list[int]": (list, int),
    "List[str]": (list, str),
    "list": (list, None),
    "List": (list, None),
}
# where our element is narrower than the real bare `List`: update_jobs_bulk's job_list holds job dictionaries
NARROWER_ELEMENTS = {("pilot/update_jobs_bulk", "job_list"): dict}


@pytest.fixture(scope="module")
def real_functions():
    try:
        source = peer_ready().source
    except PeerUnavailable as error:
        pytest.skip(f"signature test skipped: panda-server {error}")
    functions = {}
    for module in ("task", "job", "pilot"):
        tree = ast.parse((source / "pandaserver" / "api" / "v1" / f"{module}_api.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[f"{module}/{node.name}"] = node
    return functions


def real_parameters(function: ast.FunctionDef) -> dict[str, tuple[str | None, object, bool]]:
    """name → (annotation as written, default, required), without the request."""
    arguments = function.args.args
    defaults = [None] * (len(arguments) - len(function.args.defaults)) + list(function.args.defaults)
    found = {}
    for argument, default in zip(arguments, defaults, strict=True):
        if argument.arg == "req":
            continue
        annotation = ast.unparse(argument.annotation) if argument.annotation else None
        found[argument.arg] = (annotation, ast.literal_eval(default) if default else None, default is None)
    return found


SERVED = {**views.METHODS, **pilot.METHODS}


def test_every_served_method_is_a_real_one(real_functions):
    assert set(SERVED) <= set(real_functions), sorted(set(SERVED) - set(real_functions))
    # the five pilot methods issue 53 names are all served
    assert {"pilot/acquire_jobs", "pilot/get_job_status", "pilot/update_job", "pilot/update_jobs_bulk",
            "pilot/update_worker_node"} <= set(SERVED)  # fmt: skip


@pytest.mark.parametrize("path", sorted(SERVED))
def test_parameters_names_requirement_defaults_and_types_are_the_real_ones(real_functions, path):
    real = real_parameters(real_functions[path])
    ours = SERVED[path][0].parameters
    assert list(ours) == list(real), f"{path}: ours {list(ours)}, real {list(real)}"
    for name, (annotation, default, required) in real.items():
        parameter = ours[name]
        assert parameter.required == required, f"{path} {name}: required {required} in 1.0.4"
        if not required:
            assert parameter.default == default, f"{path} {name}: default {default!r} in 1.0.4"
        if annotation is None:
            continue  # the real one takes anything (remaining_time): ours converts to its own kind
        kind, element = KINDS[annotation]
        element = NARROWER_ELEMENTS.get((path, name), element)
        assert (parameter.kind, parameter.element) == (kind, element), f"{path} {name}: {annotation} in 1.0.4"

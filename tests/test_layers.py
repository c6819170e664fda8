"""The layers' direction (issue 48), checked on the source (imports inside functions count too):

- selectors read and never call services (HackSoftware's styleguide: services may use selectors, not the other way
  round);
- adapters, the one layer that touches both the ORM and the engine, import no selectors (what they read is theirs;
  selectors may read through them);
- views, serializers and admin modules use the ORM for nothing beyond one object by its key: every other read goes
  through a selector (see `orm_uses`);
- no import cycle among the project's modules."""

import ast
from pathlib import Path

import pytest

from tests.test_purity import ROOT, imported_modules

PROJECT_PACKAGES = ("brokerage", "config", "monitor", "tools")
# The modules that answer requests or edit rows for people: views, the API's views and serializers, the admin.
REQUEST_MODULES = (
    "monitor/views.py",
    "monitor/replay_views.py",
    "monitor/dispatcher.py",
    "monitor/api/views.py",
    "monitor/api/serializers.py",
    "monitor/panda_api/views.py",
    "monitor/panda_api/pilot.py",
    "monitor/metrics.py",
    "monitor/health.py",
    "brokerage/admin",
)


def imports_under(path: Path, package: str) -> set[str]:
    return {name for name in imported_modules(path) if name == package or name.startswith(package + ".")}


def files_under(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", files_under("brokerage/selectors"), ids=relative)
def test_a_selector_imports_no_service(path):
    assert imports_under(path, "brokerage.services") == set()


@pytest.mark.parametrize("path", files_under("brokerage/adapters"), ids=relative)
def test_an_adapter_imports_no_selector_and_no_service(path):
    assert imports_under(path, "brokerage.selectors") == set()
    assert imports_under(path, "brokerage.services") == set()


# --- no ORM in views beyond one object by its key ---

QUERYSET_METHODS = {
    "all", "aggregate", "annotate", "count", "create", "defer", "delete", "distinct", "exclude", "exists", "extra",
    "filter", "first", "get", "in_bulk", "last", "none", "only", "order_by", "prefetch_related", "raw",
    "select_related", "update", "values", "values_list",
}  # fmt: skip
# A DRF view's or an admin's base list (what its filters narrow and its paginator pages through): its order, joins
# and columns only.
BASE_LIST = {"order_by", "select_related", "prefetch_related", "none", "defer", "only"}
# One object by its key: select_related/values are what of it is read; first/exists end the one-row query.
ONE_BY_KEY = {"select_related", "filter", "values", "first", "exists"}


def chain(call: ast.Call) -> tuple[list[ast.Call], ast.expr]:
    """The calls of a method chain, first to last, and what the first is called on."""
    calls = []
    node = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        calls.append(node)
        node = node.func.value
    return calls[::-1], node


def on_a_queryset(base: ast.expr) -> bool:
    """`Model.objects`, an admin action's `queryset`, or an admin's own get_queryset()."""
    if isinstance(base, ast.Attribute) and base.attr == "objects":
        return True
    if isinstance(base, ast.Name) and base.id in ("queryset", "qs"):
        return True
    return isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr == "get_queryset"


def allowed(calls: list[ast.Call], base: ast.expr) -> bool:
    methods = [call.func.attr for call in calls]
    if set(methods) <= BASE_LIST:
        return True
    if set(methods) <= ONE_BY_KEY and methods[-1] in ("first", "exists"):
        filters = [call for call in calls if call.func.attr == "filter"]
        return len(filters) == 1 and not filters[0].args and [k.arg for k in filters[0].keywords] == ["pk"]
    # an admin action's selected rows, by key, each then handed to a service
    return (
        methods == ["values_list"]
        and isinstance(base, ast.Name)
        and [a.value for a in calls[0].args if isinstance(a, ast.Constant)] == ["pk"]
    )


def orm_uses(path: Path) -> list[str]:
    """Every ORM query in the module that is neither one object by key nor a DRF view's base list, as
    "line: the expression"."""
    found, inner = [], set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or id(node) in inner:
            continue
        if node.func.attr not in QUERYSET_METHODS:
            continue
        calls, base = chain(node)
        inner.update(id(call) for call in calls)
        if on_a_queryset(base) and not allowed(calls, base):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def request_modules() -> list[Path]:
    paths = []
    for entry in REQUEST_MODULES:
        path = ROOT / entry
        paths += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return paths


@pytest.mark.parametrize("path", request_modules(), ids=relative)
def test_views_serializers_and_admin_read_one_object_by_key_at_most(path):
    assert orm_uses(path) == []


def test_the_orm_check_sees_a_query(tmp_path):
    """The check is not vacuous: a filter by anything but the key, an aggregate or a count is reported."""
    source = tmp_path / "views.py"
    source.write_text(
        "def page(request, pk):\n"
        "    one = Task.objects.filter(pk=pk).first()\n"
        "    base = Job.objects.select_related('task').order_by('-pk')\n"
        "    mine = Task.objects.filter(userName=request.user.username).count()\n"
        "    busy = Job.objects.values('computingSite').annotate(n=Count('pk'))\n"
    )
    assert orm_uses(source) == [
        "4: Task.objects.filter(userName=request.user.username).count()",
        "5: Job.objects.values('computingSite').annotate(n=Count('pk'))",
    ]


# --- no import cycle ---


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PROJECT_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the project modules it imports (at its top or inside a function). `from package import module` is
    an edge to the module; `from module import name` to the module."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                module = ".".join(part for part in (base, node.module or "") if part)
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
            else:
                continue
            graph[name].update(t for t in map(known, targets) if t and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_among_the_project_modules():
    assert cycles(import_graph(project_modules())) == []


def test_the_cycle_check_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []

"""Work-queue criteria, task → work queue mapping, share distribution and the global share tree (seed 002:
"Work queues", "Shares"; REFERENCE.md: "Global shares"). Plain Python: the services feed it rows.

JEDI keeps a work queue's selection criteria as SQL with bind variables (`processingType IN (:p1,:p2)` with
VARIABLES `p1:evgen,p2:simul`). We never run that text as SQL: it is parsed into a small, safe expression
language and evaluated over a task's attributes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from brokerage.engine.core.plugin import Variants


class CriteriaError(ValueError):
    """Criteria or variables that cannot be read; the message says where."""


# The task attributes criteria may name (JEDI writes them in any case: processingtype, processingType…).
ATTRIBUTES = {
    name.lower(): name
    for name in (
        "processingType",
        "workingGroup",
        "prodSourceLabel",
        "coreCount",
        "taskPriority",
        "currentPriority",
        "campaign",
        "userName",
        "gshare",
        "taskType",
        "transPath",
        "transUses",
        "vo",
        "site",
        "cloud",
        "eventService",
        "requestType",
    )
}

_TOKEN = re.compile(
    r"\s*(?:(?P<string>'[^']*')|(?P<number>-?\d+(?:\.\d+)?)|(?P<bind>:[A-Za-z_]\w*)|(?P<op><>|!=|<=|>=|=|<|>)"
    r"|(?P<paren>[(),])|(?P<word>[A-Za-z_][\w.%*-]*))"
)
KEYWORDS = {"and", "or", "not", "in", "like", "is", "null"}


@dataclass(frozen=True)
class Token:
    kind: str
    value: str
    position: int


def parse_variables(text: str) -> dict[str, str]:
    """'p1:evgen,p2:simul' → {'p1': 'evgen', 'p2': 'simul'}."""
    variables: dict[str, str] = {}
    for item in (part.strip() for part in (text or "").split(",")):
        if not item:
            continue
        name, separator, value = item.partition(":")
        if not separator or not re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
            raise CriteriaError(f"variables: {item!r} is not name:value")
        variables[name.strip()] = value.strip()
    return variables


def _tokens(text: str) -> list[Token]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            if text[position:].strip() == "":
                break
            raise CriteriaError(f"criteria: cannot read {text[position:].strip()[:20]!r} at position {position}")
        kind = match.lastgroup
        value, start = match.group(kind), match.start(kind)
        if kind == "word" and value.lower() in KEYWORDS:
            kind = value.lower()
        tokens.append(Token(kind, value, start))
        position = match.end()
    return tokens


class _Parser:
    """criteria := or; or := and (OR and)*; and := not (AND not)*; not := NOT not | '(' or ')' | comparison."""

    def __init__(self, text: str, variables: Mapping[str, str]):
        self.tokens = _tokens(text)
        self.index = 0
        self.variables = variables

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, *kinds: str) -> Token:
        token = self.peek()
        if token is None or token.kind not in kinds:
            where = f"at position {token.position} ({token.value!r})" if token else "at the end"
            raise CriteriaError(f"criteria: expected {' or '.join(kinds)} {where}")
        self.index += 1
        return token

    def parse(self):
        if not self.tokens:
            return ("true",)
        node = self.or_()
        if self.peek() is not None:
            token = self.peek()
            raise CriteriaError(f"criteria: unexpected {token.value!r} at position {token.position}")
        return node

    def or_(self):
        node = self.and_()
        while self.peek() is not None and self.peek().kind == "or":
            self.take("or")
            node = ("or", node, self.and_())
        return node

    def and_(self):
        node = self.not_()
        while self.peek() is not None and self.peek().kind == "and":
            self.take("and")
            node = ("and", node, self.not_())
        return node

    def not_(self):
        token = self.peek()
        if token is not None and token.kind == "not":
            self.take("not")
            return ("not", self.not_())
        if token is not None and token.value == "(":
            self.take("paren")
            node = self.or_()
            closing = self.take("paren")
            if closing.value != ")":
                raise CriteriaError(f"criteria: expected ')' at position {closing.position}")
            return node
        return self.comparison()

    def value(self):
        token = self.take("string", "number", "bind", "word")
        if token.kind == "string":
            return token.value[1:-1]
        if token.kind == "number":
            return float(token.value)
        if token.kind == "bind":
            name = token.value[1:]
            if name not in self.variables:
                raise CriteriaError(f"criteria: variable :{name} is not defined in variables")
            return _typed(self.variables[name])
        return token.value

    def comparison(self):
        word = self.take("word")
        attribute = ATTRIBUTES.get(word.value.lower())
        if attribute is None:
            raise CriteriaError(
                f"criteria: unknown task attribute {word.value!r} at position {word.position} "
                f"(known: {', '.join(sorted(ATTRIBUTES.values()))})"
            )
        token = self.peek()
        negate = False
        if token is not None and token.kind == "not":
            self.take("not")
            negate = True
            token = self.peek()
        if token is not None and token.kind == "in":
            self.take("in")
            opening = self.take("paren")
            if opening.value != "(":
                raise CriteriaError(f"criteria: expected '(' after IN at position {opening.position}")
            values = [self.value()]
            while self.peek() is not None and self.peek().value == ",":
                self.take("paren")
                values.append(self.value())
            self.take("paren")
            node = ("in", attribute, tuple(values))
        elif token is not None and token.kind == "like":
            self.take("like")
            node = ("like", attribute, _like_pattern(str(self.value())))
        elif token is not None and token.kind == "is":
            self.take("is")
            if self.peek() is not None and self.peek().kind == "not":
                self.take("not")
                negate = not negate
            self.take("null")
            node = ("null", attribute)
        elif not negate and token is not None and token.kind == "op":
            op = self.take("op").value
            node = ("cmp", attribute, "!=" if op == "<>" else op, self.value())
        else:
            where = f"at position {token.position}" if token else "at the end"
            raise CriteriaError(f"criteria: expected IN, LIKE, IS or a comparison after {word.value} {where}")
        return ("not", node) if negate else node


def _typed(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text


def _like_pattern(pattern: str) -> re.Pattern:
    """SQL LIKE: % any run, _ one character, everything else literal."""
    parts = [".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern]
    return re.compile("".join(parts), re.DOTALL)


@dataclass(frozen=True)
class Criteria:
    """Parsed selection criteria; `matches(task)` evaluates them over a mapping of task attributes."""

    text: str
    tree: tuple

    @classmethod
    def parse(cls, text: str, variables: str | Mapping[str, str] = "") -> Criteria:
        bound = parse_variables(variables) if isinstance(variables, str) else dict(variables)
        return cls(text or "", _Parser(text or "", bound).parse())

    def matches(self, task: Mapping[str, Any]) -> bool:
        return _evaluate(self.tree, task)


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, float) and actual not in (None, ""):
        try:
            return float(actual) == expected
        except (TypeError, ValueError):
            return False
    return str(actual) == str(expected)


def _evaluate(node: tuple, task: Mapping[str, Any]) -> bool:
    kind = node[0]
    if kind == "true":
        return True
    if kind == "and":
        return _evaluate(node[1], task) and _evaluate(node[2], task)
    if kind == "or":
        return _evaluate(node[1], task) or _evaluate(node[2], task)
    if kind == "not":
        return not _evaluate(node[1], task)
    actual = task.get(node[1])
    if kind == "null":
        return actual in (None, "")
    if kind == "in":
        return any(_same(actual, value) for value in node[2])
    if kind == "like":
        return actual not in (None, "") and node[2].fullmatch(str(actual)) is not None
    _, _, op, expected = node
    if op in ("=", "!="):
        return _same(actual, expected) == (op == "=")
    try:
        left, right = float(actual), float(expected)
    except (TypeError, ValueError):
        return False
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


# --- work queues ---

# JEDI maps a task's prodSourceLabel to the queue type it is evaluated against
QUEUE_TYPE_OF_LABEL = {"managed": "production", "user": "analysis", "panda": "analysis"}


@dataclass(frozen=True)
class QueueRule:
    """A work queue as the mapping sees it. Partitions have no criteria and own sub-queues (`partition`)."""

    queue_id: int
    name: str
    queue_type: str
    vo: str
    order: int
    criteria: Criteria
    is_partition: bool = False
    partition_id: int | None = None
    active: bool = True


def work_queue_for(task: Mapping[str, Any], rules: Sequence[QueueRule]) -> QueueRule | None:
    """The first active queue (lowest order) of the task's VO and queue type whose criteria the task passes
    (seed 002). Partitions are not candidates themselves: their sub-queues are, and a task mapped to a sub-queue
    belongs to its partition too (`partition_of`)."""
    queue_type = QUEUE_TYPE_OF_LABEL.get(task.get("prodSourceLabel") or "", "test")
    vo = task.get("vo") or "atlas"
    for rule in sorted(rules, key=lambda r: (r.order, r.queue_id)):
        if rule.is_partition or not rule.active or rule.vo != vo or rule.queue_type != queue_type:
            continue
        if rule.criteria.matches(task):
            return rule
    return None


def distribute_shares(queues: Sequence[tuple[str, float, bool, bool]]) -> dict[str, float]:
    """Effective shares of (name, share, stretchable, active) queues (seed 002): inactive queues give their
    share away; stretchable active queues take it in proportion to their own shares, or, with none
    stretchable, all active queues do. Inactive queues end with 0."""
    active = [(name, share, stretchable) for name, share, stretchable, is_active in queues if is_active]
    unused = sum(share for _, share, _, is_active in queues if not is_active)
    takers = [(name, share) for name, share, stretchable in active if stretchable] or [(n, s) for n, s, _ in active]
    taker_total = sum(share for _, share in takers)
    result = {name: 0.0 for name, *_ in queues}
    for name, share, _ in active:
        result[name] = float(share)
    if taker_total > 0:
        for name, share in takers:
            result[name] += unused * share / taker_total
    elif takers:  # every taker has share 0: split the unused share evenly
        for name, _ in takers:
            result[name] += unused / len(takers)
    return result


# --- global shares ---


@dataclass(frozen=True)
class ShareNode:
    name: str
    value: float
    parent: str | None


def normalised_shares(nodes: Sequence[ShareNode], *, root_value: float = 100.0) -> dict[str, float]:
    """REFERENCE.md: a child's normalised value = parent's × child / sum of its siblings, the top level
    sharing `root_value` (100). Siblings all at 0 share their parent's value evenly."""
    children: dict[str | None, list[ShareNode]] = {}
    for node in nodes:
        children.setdefault(node.parent, []).append(node)
    result: dict[str, float] = {}

    def visit(parent: str | None, available: float) -> None:
        siblings = children.get(parent, [])
        total = sum(node.value for node in siblings)
        for node in siblings:
            # value × (parent / siblings' sum), in this order, as GlobalShares.Share.normalize multiplies: the
            # pledges of two shares a hair apart decide which goes first (tools/peer/shares_compare.py)
            share = node.value * (available / total) if total > 0 else available / len(siblings)
            result[node.name] = share
            visit(node.name, share)

    visit(None, root_value)
    return result


def share_usage(
    normalised: Mapping[str, float], executing: Mapping[str, float], leaves: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """REFERENCE.md: per leaf, target = total executing × normalised / 100 and usage = executing / target
    (None when the target is 0)."""
    total = sum(executing.get(leaf, 0.0) for leaf in leaves)
    rows = {}
    for leaf in leaves:
        target = total * normalised.get(leaf, 0.0) / 100.0
        running = executing.get(leaf, 0.0)
        rows[leaf] = {"executing": running, "target": target, "usage": running / target if target > 0 else None}
    return rows


# --- the order the grid serves the shares in (panda-server 1.0.4: GlobalShares.py, entity_module.py) ---

EXECUTING_HS06, QUEUED_HS06, PLEDGED_HS06 = "executing", "queued", "pledged"
# a share with no target sorts after every share that has one (GlobalShares.sort_branch_by_current_hs_distribution)
NO_TARGET_RATIO = 10**6
# the share whose jobs go before every other's (JobDispatcher's criteria: "Test share will bypass others")
FIRST_SHARE = "Test"


def hs06_distribution(
    *, nodes: Sequence[ShareNode], executing: Mapping[str, float], queued: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """Each share's executing, queued and pledged HS06, as entity_module.__get_hs_leave_distribution and
    GlobalShares.aggregate_hs_distribution make them: a leaf's pledge is the grid's executing HS06 (every share's,
    leaf or not) × its normalised value / 100; a parent's figures are its children's sums. `executing` (sent and
    running) and `queued` (activated) are per gshare."""
    normalised = normalised_shares(nodes)
    children: dict[str | None, list[str]] = {}
    for node in nodes:
        children.setdefault(node.parent, []).append(node.name)
    total = sum(executing.values())
    distribution: dict[str, dict[str, float]] = {
        name: {EXECUTING_HS06: float(executing.get(name, 0.0)), QUEUED_HS06: float(queued.get(name, 0.0)),
               PLEDGED_HS06: 0.0}
        for name in {*executing, *queued}
    }  # fmt: skip

    def visit(name: str) -> tuple[float, float, float]:
        if name not in children:  # a leaf
            row = distribution.setdefault(name, {EXECUTING_HS06: 0.0, QUEUED_HS06: 0.0, PLEDGED_HS06: 0.0})
            row[PLEDGED_HS06] = total * normalised.get(name, 0.0) / 100.0
            return row[EXECUTING_HS06], row[QUEUED_HS06], row[PLEDGED_HS06]
        sums = [visit(child) for child in children[name]]
        figures = tuple(sum(values) for values in zip(*sums, strict=True))
        distribution[name] = dict(zip((EXECUTING_HS06, QUEUED_HS06, PLEDGED_HS06), figures, strict=True))
        return figures  # type: ignore[return-value]

    for top in children.get(None, []):
        visit(top)
    return distribution


def under_pledge_order(*, nodes: Sequence[ShareNode], distribution: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The leaf shares, furthest below their pledge first: at each level the children in order of executing /
    pledged (no pledge: NO_TARGET_RATIO), ties keeping the tree's order, each child followed by its own sorted
    leaves. GlobalShares.sort_branch_by_current_hs_distribution, including its insertion sort's way with ties."""
    children: dict[str | None, list[str]] = {}
    for node in nodes:
        children.setdefault(node.parent, []).append(node.name)

    def ratio(name: str) -> float:
        row = distribution[name]
        return row[EXECUTING_HS06] / row[PLEDGED_HS06] if row[PLEDGED_HS06] else NO_TARGET_RATIO

    def branch(name: str | None) -> list[str]:
        if name is not None and name not in children:
            return [name]
        ranked: list[str] = []
        for child in children.get(name, []):
            insert = len(ranked)
            for index, other in enumerate(ranked):
                if ratio(child) < ratio(other):
                    insert = index
                    break
            ranked.insert(insert, child)
        return [leaf for child in ranked for leaf in branch(child)]

    return branch(None)


def under_pledge_serve(
    *,
    nodes: Sequence[ShareNode],
    distribution: Mapping[str, Mapping[str, float]],
    waiting: Sequence[tuple[int, str, float]],
    slots: int,
) -> tuple[list[int], dict[str, dict[str, float]]]:
    """The jobs `slots` pilots arriving one after the other take from `waiting` (job id, gshare, HS06; each share's
    jobs in the order they are served: highest priority first), and the distribution after they started: each pilot
    gets a job of the first share in the under-pledge order that has one waiting (Test before all, a gshare outside
    the tree last), and the HS06 of the job it starts counts as executing for the next pilot, its share's and every
    parent's. What getJob does when the order is read again between pilots; served in one go, a batch of free slots
    would all go to one share."""
    parent = {node.name: node.parent for node in nodes}
    figures = {name: dict(row) for name, row in distribution.items()}
    queues: dict[str, list[tuple[int, float]]] = {}
    for pk, gshare, hs06 in waiting:
        queues.setdefault(gshare, []).append((pk, hs06))
    for queue in queues.values():
        queue.reverse()  # popped from the end
    taken: list[int] = []
    while len(taken) < slots and queues:
        order = under_pledge_order(nodes=nodes, distribution=figures)
        ranked = sorted(queues, key=lambda share: (0 if share == FIRST_SHARE else 1, _rank(order, share)))
        share = ranked[0]
        pk, hs06 = queues[share].pop()
        if not queues[share]:
            del queues[share]
        taken.append(pk)
        name: str | None = share
        while name is not None and name in figures:
            figures[name][EXECUTING_HS06] += hs06
            name = parent.get(name)
    return taken, figures


def _rank(order: list[str], share: str) -> int:
    return order.index(share) if share in order else len(order)


# --- shares that allocate the grid at job generation (seed 002, "Shares") ---

GLOBAL_SHARE_LEVEL, WORK_QUEUE_LEVEL = "global share", "work queue"


@dataclass(frozen=True)
class ShareState:
    """One share of a pool (the leaf global shares, or the throttled work queues of one type) as job generation
    sees it: its own share in percent of the pool, whether it takes idle shares first (stretchable), whether it is
    busy (jobs sent, running or queued, or a task that can get jobs), the HS06 its sent and running jobs use, the
    HS06 of its jobs queued to run and, of those, the HS06 of the jobs waiting for a pilot (activated: their input is
    there, only a slot is missing)."""

    name: str
    share: float
    stretchable: bool
    busy: bool
    executing: float
    queued: float = 0.0
    waiting: float = 0.0


@dataclass(frozen=True)
class ShareAllocation:
    """What a share may use of its pool now and whether new jobs are held back: `effective` is its share in percent
    after idle shares were lent, `target` that part of the HS06 the pool's jobs execute; `held` says why ("running":
    it executes over its target, "queued": its queued jobs are over `queued_ratio` × its target), empty when not."""

    level: str
    name: str
    executing: float
    target: float
    effective: float
    queued: float = 0.0
    queued_ratio: float = 0.0
    held: str = ""

    @property
    def message(self) -> str:
        """'global share MC 16 runs 1,320 HS06 over a target of 1,100: no new jobs' (empty when not held)."""
        if self.held == "running":
            return (
                f"{self.level} {self.name} runs {self.executing:,.0f} HS06 over a target of {self.target:,.0f}: "
                "no new jobs"
            )
        if self.held == "queued":
            return (
                f"{self.level} {self.name} holds {self.queued:,.0f} HS06 queued over {self.queued_ratio:g} × a target "
                f"of {self.target:,.0f}: no new jobs"
            )
        return ""


def share_allocations_seed(
    *, level: str, shares: Sequence[ShareState], queued_ratio: float
) -> dict[str, ShareAllocation]:
    """seed 002 "Shares": each share gets its part of the CPU the pool's jobs use; an idle share's part is lent to
    the busy stretchable shares first, in proportion to their own shares, else to every busy share (REFERENCE.md,
    distribute_shares). A share gets no new jobs
    - while it runs more than its target and another share below its own has jobs waiting for a pilot to take the
      slots the first frees (the pilots serve the share furthest below its pledge first): when no share below its
      target has jobs waiting for a slot — none, or only jobs still waiting for their input — the grid has room for
      both, and holding one would leave slots idle that help nobody;
    - while its queued jobs are more than `queued_ratio` (THROTTLE_THRESHOLD) × its target and another busy share
      runs below its own: the queues' caps count every share's queued jobs together (seed 000, "too many queued"),
      and one share's backlog would keep the others' jobs out of every queue."""
    effective = distribute_shares([(s.name, s.share, s.stretchable, s.busy) for s in shares])
    pool = sum(s.share for s in shares)
    total = sum(s.executing for s in shares)
    percent = {s.name: (100.0 * effective[s.name] / pool if pool > 0 else 0.0) for s in shares}
    target = {s.name: total * percent[s.name] / 100.0 for s in shares}
    below = {s.name for s in shares if s.busy and s.executing < target[s.name]}
    waiting_below = {s.name for s in shares if s.name in below and s.waiting > 0}

    def held(state: ShareState) -> str:
        if state.executing > target[state.name] and waiting_below - {state.name}:
            return "running"
        if total > 0 and state.queued > queued_ratio * target[state.name] and below - {state.name}:
            return "queued"
        return ""

    return {
        s.name: ShareAllocation(
            level=level,
            name=s.name,
            executing=s.executing,
            target=target[s.name],
            effective=percent[s.name],
            queued=s.queued,
            queued_ratio=queued_ratio,
            held=held(s),
        )
        for s in shares
    }


def share_allocations_panda(
    *, level: str, shares: Sequence[ShareState], queued_ratio: float
) -> dict[str, ShareAllocation]:
    """panda-server 1.0.4 allocates no share at job generation: JobGenerator and JobThrottlerBase read a global share
    only as one more level of NQUEUELIMIT/NRUNNINGCAP/NQUEUECAP, and the shares are served in getJob's order
    (JobDispatcher.getCriteriaForGlobalShares). The targets are still computed, for the pages; nothing is held."""
    seed = share_allocations_seed(level=level, shares=shares, queued_ratio=queued_ratio)
    return {name: replace(allocation, held="") for name, allocation in seed.items()}


share_allocation_rules = Variants("SHARE_ALLOCATION_RULE", seed=share_allocations_seed, panda=share_allocations_panda)

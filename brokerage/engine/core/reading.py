"""Reading plain JSON data with a path in every error: ScenarioError names the JSON path of the problem and what
was expected; _Reader reads a section's keys as typed values (every parser of a scenario reads through it)."""

from __future__ import annotations

import math


class ScenarioError(ValueError):
    """Invalid scenario input: `path` is a JSON path such as $.queues.CERN.maxrss."""

    def __init__(self, path: str, expected: str, got: object = None, *, show_got: bool = True):
        self.path = path
        self.expected = expected
        got_text = f", got {describe(got)}" if show_got else ""
        super().__init__(f"{path}: expected {expected}{got_text}")


def describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
    if isinstance(value, int | float):
        return repr(value)
    return (
        type(value).__name__
        if not isinstance(value, dict | list)
        else ("an object" if isinstance(value, dict) else "a list")
    )


def key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if key.replace("_", "").replace("-", "").isalnum() else f"{path}[{key!r}]"


class Reader:
    """Typed access to one JSON object, remembering where it is for error messages. Each read takes the common
    case (a value of its JSON type) first, by exact type: a scenario is read on every decision, and the general
    checks that name what is wrong cost three times as much."""

    __slots__ = ("_key", "_parent", "data")

    def __init__(self, data: object, path: str, key: str | None = None):
        if not isinstance(data, dict):
            raise ScenarioError(path if key is None else key_path(path, key), "an object", data)
        self.data = data
        self._parent, self._key = path, key  # the path is made only for an error message

    @property
    def path(self) -> str:
        return self._parent if self._key is None else key_path(self._parent, self._key)

    def at(self, key: str) -> str:
        return key_path(self.path, key)

    def number(self, key: str, default: float | None = None, *, minimum: float | None = None) -> float | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        kind = type(value)
        if (kind is int or (kind is float and math.isfinite(value))) and (minimum is None or value >= minimum):
            return float(value)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ScenarioError(self.at(key), "a number", value)
        if minimum is not None and value < minimum:
            raise ScenarioError(self.at(key), f"a number ≥ {minimum:g}", value)
        return float(value)

    def integer(self, key: str, default: int | None = None, *, minimum: int | None = None) -> int | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if type(value) is int and (minimum is None or value >= minimum):
            return value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(self.at(key), "a whole number", value)
        if minimum is not None and value < minimum:
            raise ScenarioError(self.at(key), f"a whole number ≥ {minimum}", value)
        return value

    def text(self, key: str, default: str = "", *, choices: tuple[str, ...] | None = None) -> str:
        value = self.data.get(key, default)
        if value is None:
            value = ""
        elif type(value) is not str and not isinstance(value, str):
            raise ScenarioError(self.at(key), "text", value)
        if choices is not None and value not in choices:
            raise ScenarioError(self.at(key), "one of " + ", ".join(repr(c) for c in choices), value)
        return value

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key, default)
        if value is None:
            return default
        if value is not True and value is not False:
            raise ScenarioError(self.at(key), "true or false", value)
        return value

    def names(self, key: str) -> tuple[str, ...]:
        """A list of names, or the comma-separated string JEDI task parameters often use."""
        value = self.data.get(key)
        if value in (None, ""):
            return ()
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(value)
        raise ScenarioError(self.at(key), "a list of names or a comma-separated string", value)

    def obj(self, key: str) -> dict:
        value = self.data.get(key, {})
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ScenarioError(self.at(key), "an object", value)
        return value

    def lst(self, key: str) -> list:
        value = self.data.get(key, [])
        if value is None:
            return []
        if not isinstance(value, list):
            raise ScenarioError(self.at(key), "a list", value)
        return value

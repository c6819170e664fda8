"""The gdpconfig parameter registry and its resolution rules (plain Python, shared by engine and admin)."""

from .registry import (
    REGISTRY,
    VALUE_TYPES,
    ConfigView,
    GdpConfigError,
    InvalidValue,
    Parameter,
    Registry,
    UnknownParameter,
    format_value,
    parse_value,
)

__all__ = [
    "REGISTRY",
    "VALUE_TYPES",
    "ConfigView",
    "GdpConfigError",
    "InvalidValue",
    "Parameter",
    "Registry",
    "UnknownParameter",
    "format_value",
    "parse_value",
]

"""Pydantic's validation errors, told as one line: the dotted key and the bad value.

Validators in this package raise :class:`FieldProblem` (a ``ValueError``, so pydantic
records it) with the message they want shown; everything else is pydantic's own error
type, phrased here. Only the first error is told: one fix at a time, one line.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from icefloe.base.errors import ConfigError

ROOT = "<root>"
INTERNAL_FIELDS = ("source", "home")  # fields of Config that no file sets


class FieldProblem(ValueError):
    """A validator's verdict: ``text`` follows ``config key 'a.b'`` (``key`` extends it)."""

    def __init__(self, text: str, key: str | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.key = key


def show(value: Any) -> str:
    """``repr`` of a bad value, kept short."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


_TYPE_WORDS = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "string_too_short": "a non-empty string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping",
    "mapping_type": "a mapping",
    "dataclass_type": "a mapping",
    "dataclass_exact_type": "a mapping",
    "model_type": "a mapping",
    "list_type": "a list",
    "tuple_type": "a list",
}


def _bound(kind: str, ctx: Mapping[str, Any]) -> str | None:
    if kind == "greater_than":
        return "positive" if ctx.get("gt") == 0 else f"> {ctx.get('gt')}"
    if kind == "greater_than_equal":
        return f">= {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"<= {ctx.get('le')}"
    if kind == "less_than":
        return f"< {ctx.get('lt')}"
    return _TYPE_WORDS.get(kind)


def allowed_keys(root: type, path: Sequence[Any]) -> list[str] | None:
    """The field names of the section at ``path`` below the dataclass ``root``."""
    try:
        hint: Any = root
        parts = list(path)
        while parts:
            hint = typing.get_type_hints(hint)[parts.pop(0)]
            if typing.get_origin(hint) in (dict, Mapping):
                hint = typing.get_args(hint)[1]
                parts.pop(0)
        names = [f.name for f in dataclasses.fields(hint)]
    except (KeyError, IndexError, TypeError, NameError):
        return None
    return [n for n in names if not (root is hint and n in INTERNAL_FIELDS)]


def describe(err: Mapping[str, Any], root: type, prefix: Sequence[str] = ()) -> str:
    """One pydantic error as one line."""
    loc = [p for p in err["loc"] if not isinstance(p, int)]  # list items: name the list
    parts = [*prefix, *(str(p) for p in loc)]
    ctx = err.get("ctx") or {}
    problem = ctx.get("error")
    if isinstance(problem, FieldProblem):
        key = ".".join([*parts, problem.key] if problem.key else parts)
        return f"config key {key!r} {problem.text}"
    kind = err["type"]
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        key = ".".join(parts if len(parts) > 1 else [ROOT, *parts])
        allowed = allowed_keys(root, loc[:-1])
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return f"unknown config key {key!r}{hint}"
    key = ".".join(parts) or ROOT
    words = _bound(kind, ctx)
    if words is None:
        words = str(err.get("msg", "invalid")).lower()
    return f"config key {key!r} must be {words}, got {show(err.get('input'))}"


def config_error(exc: ValidationError, root: type, prefix: Sequence[str] = ()) -> ConfigError:
    """The :class:`ConfigError` telling the first of ``exc``'s errors, on one line."""
    errors = exc.errors(include_url=False)
    text = describe(errors[0], root, prefix) if errors else f"invalid config: {exc.title}"
    return ConfigError(" ".join(text.splitlines()))

"""Validating a raw mapping against a config model: one :class:`ConfigError` line or a value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from service.config.messages import config_error
from service.errors import ConfigError

T = TypeVar("T")


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(model: type[T]) -> TypeAdapter[T]:
    adapter = _ADAPTERS.get(model)
    if adapter is None:
        adapter = _ADAPTERS[model] = TypeAdapter(model)
    return adapter


def validate(model: type[T], raw: Mapping[str, Any], prefix: Sequence[str] = ()) -> T:
    """``model`` from ``raw``; errors name the dotted key below ``prefix``."""
    try:
        return _adapter(model).validate_python(dict(raw))
    except ValidationError as e:
        raise config_error(e, model, prefix) from None


def validate_section(model: type[T], raw: Mapping[str, Any] | None, key: str) -> T:
    """One section (e.g. ``decider``) on its own; errors name ``key.field``."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key {key!r} must be a mapping, got {raw!r}")
    return validate(model, raw, (key,))

"""Validating a raw mapping against a config model: one :class:`ConfigError` line or a value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from icefloe.base.config.messages import config_error
from icefloe.base.errors import ConfigError
from icefloe.base.redact import MASK, MIN_SECRET, is_secret_name, url_password

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
        error = config_error(e, model, prefix)
    raise ConfigError(hide_secrets(str(error), raw)) from None


NOT_SECRETS = ("key_prefix",)  # typed fields whose name only looks like a secret's


def secret_values(raw: Any, secret: bool = False) -> set[str]:
    """Every value in ``raw`` that must never be printed: the values (scalars, list items,
    nested values) under a secret-named key (``s3.secret-access-key``), and URL passwords."""
    found: set[str] = set()
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            named = isinstance(key, str) and key not in NOT_SECRETS and is_secret_name(key)
            found |= secret_values(value, secret or named)
    elif isinstance(raw, (list, tuple, set)):
        for value in raw:
            found |= secret_values(value, secret)
    elif raw is not None:
        text = str(raw)
        if secret:
            found.update({text, repr(raw)})
        elif "://" in text and (password := url_password(text)):
            found.add(password)
    return {v for v in found if len(v) >= MIN_SECRET}


def hide_secrets(message: str, raw: Any) -> str:
    """``message`` with every secret value of ``raw`` (:func:`secret_values`) masked: a
    config error never prints one, whatever the validator put in its text."""
    for value in sorted(secret_values(raw), key=len, reverse=True):
        message = message.replace(value, MASK)
    return message


def validate_section(model: type[T], raw: Mapping[str, Any] | None, key: str) -> T:
    """One section (e.g. ``decider``) on its own; errors name ``key.field``."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config key {key!r} must be a mapping, got {raw!r}")
    return validate(model, raw, (key,))

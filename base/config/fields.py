"""Field types of the config models: strict numbers, choices, identifiers, string maps.

Strict: a boolean is not an integer, ``"10"`` is not a number, ``2.5`` is not an
integer; floats are finite. Each validator raises :class:`FieldProblem`, whose text
:mod:`icefloe.base.config.messages` shows after the dotted key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, Strict

from icefloe.base.config.identifiers import is_identifier, is_namespace, is_table
from icefloe.base.config.messages import FieldProblem, show
from icefloe.base.redact import is_secret_name
from icefloe.optimizer.actions import MAINTENANCE_ACTIONS as MAINTENANCE_ACTIONS
from icefloe.optimizer.actions import NAMES, REQUESTABLE

# every action's name comes from the registry (``icefloe.optimizer.actions``): the data-file
# rewrites `optimize` and `request` take, and the maintenance the ``maintenance`` policy decides
ACTIONS = REQUESTABLE
POLICY_ACTIONS = NAMES
NOT_DECIDED_YET: tuple[str, ...] = ()  # accepted actions nothing runs: rejected, not ignored
CATALOG_TYPES = ("sql", "rest", "hive", "glue")
ENGINES = ("auto", "spark")

STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)  # every config model's

MAX_LONG = (1 << 63) - 1  # a Java long: what Iceberg, Spark and Redis counters hold
PositiveInt = Annotated[int, Strict(), Field(gt=0, le=MAX_LONG)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0, le=MAX_LONG)]
MAX_TARGET = 1 << 40  # 1 TiB: a target file size past any engine's
TargetSize = Annotated[int, Strict(), Field(gt=0, le=MAX_TARGET)]
MAX_PRIORITY = 1000  # priority classes, 0 the highest
Priority = Annotated[int, Strict(), Field(ge=0, le=MAX_PRIORITY)]
MinInputFiles = Annotated[int, Strict(), Field(ge=2)]  # one file alone is never merged
ShardCount = Annotated[int, Strict(), Field(ge=1, le=1024)]
Port = Annotated[int, Strict(), Field(ge=0, le=65535)]
PositiveFloat = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
Fraction = Annotated[float, Strict(), Field(gt=0, le=1, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]
NonEmptyStr = Annotated[str, Strict(), Field(min_length=1)]
# mean clustering depth a sorted partition may reach (icefloe.optimizer.layout): 1 = fully sorted
ClusteringDepth = Annotated[float, Strict(), Field(ge=1, allow_inf_nan=False)]


def one_of(choices: tuple[str, ...]) -> BeforeValidator:
    def check(value: Any) -> Any:
        if not isinstance(value, str) or value not in choices:
            raise FieldProblem(f"must be one of {', '.join(choices)}, got {show(value)}")
        return value

    return BeforeValidator(check)


def choices(values: tuple[str, ...]) -> Any:
    """The values a field (or each of its items) takes, for the configuration reference."""
    return Field(json_schema_extra={"choices": list(values)})


def _identifier(value: str) -> str:
    if not is_identifier(value):
        raise FieldProblem(f"must be an identifier, got {show(value)}")
    return value


def _each(test: Callable[[object], bool], what: str) -> AfterValidator:
    def check(values: tuple[str, ...]) -> tuple[str, ...]:
        for value in values:
            if not test(value):
                raise FieldProblem(f"has bad {what} {show(value)}")
        return values

    return AfterValidator(check)


def _scalar_map(raw: Any) -> Any:
    """Spark conf and catalog properties: scalar values, as strings (``true`` → "true")."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise FieldProblem(f"must be a mapping, got {show(raw)}")
    out: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or value is None or isinstance(value, (Mapping, list)):
            shown = "a secret's value (not shown)" if is_secret_name(str(key)) else show(value)
            raise FieldProblem(f"must be a scalar, got {shown}", key=str(key))
        out[key] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _actions(raw: Any) -> tuple[str, ...]:
    known = f"(known: {', '.join(POLICY_ACTIONS)})"
    if not isinstance(raw, (list, tuple)):
        raise FieldProblem(f"must be a list of actions {known}, got {show(raw)}")
    actions = []
    for action in raw:
        if action in NOT_DECIDED_YET:
            raise FieldProblem(f"has action {action!r}, which icefloe does not decide yet")
        if not isinstance(action, str) or action not in POLICY_ACTIONS:
            raise FieldProblem(f"has unknown action {show(action)} {known}")
        actions.append(action)
    return tuple(actions)


def _redis_url(url: str) -> str:
    # the value is not shown: a URL may hold a password
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise FieldProblem("must start with redis://, rediss:// or unix://")
    try:
        urlsplit(url).port  # noqa: B018 (parsing it raises on a port out of 0-65535)
    except ValueError:
        raise FieldProblem("has a bad port (expected 0-65535)") from None
    return url


def _archive(path: str) -> str:
    if path and not path.endswith((".tar.gz", ".tgz")):
        raise FieldProblem(
            f"must name a .tar.gz or .tgz archive (built by `icefloe pack`), got {show(path)}"
        )
    return path


Identifier = Annotated[NonEmptyStr, AfterValidator(_identifier)]
CatalogType = Annotated[str, one_of(CATALOG_TYPES), choices(CATALOG_TYPES)]
Engine = Annotated[str, one_of(ENGINES), choices(ENGINES)]
RedisUrl = Annotated[NonEmptyStr, AfterValidator(_redis_url)]
ArchivePath = Annotated[str, Strict(), AfterValidator(_archive)]
ScalarMap = Annotated[Mapping[str, str], BeforeValidator(_scalar_map)]
Actions = Annotated[tuple[str, ...], BeforeValidator(_actions), choices(POLICY_ACTIONS)]
Columns = Annotated[tuple[NonEmptyStr, ...], _each(is_identifier, "column")]
Namespaces = Annotated[tuple[NonEmptyStr, ...], _each(is_namespace, "namespace")]
Tables = Annotated[tuple[NonEmptyStr, ...], _each(is_table, "table identifier")]

"""Reading a config file that cannot stall a command: bounded, regular, strict YAML.

A config file is a few kilobytes of YAML. What it must never do, whoever wrote it:

* be read without limit (``--config /dev/zero``) or block (a FIFO): only a regular file
  of at most :data:`MAX_BYTES` is read;
* expand past its size (a "billion laughs" alias bomb: 9 levels of 9 aliases is ~900
  bytes and 387 million nodes): the composed document may expand to at most
  :data:`MAX_NODES` nodes, aliases counted as often as they are used, and an alias that
  contains itself is refused;
* say one thing twice: a key repeated in a mapping (YAML lets the last one win, silently)
  is refused with its line.

Each refusal is one :class:`~icefloe.base.errors.ConfigError` line (exit 2). The same
bounds hold for an ``ICEFLOE_*`` override's value (:func:`env_value`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from icefloe.base.errors import ConfigError

MAX_BYTES = 1 << 20
"""A config file's size at most (1 MiB: hundreds of times a real one)."""

MAX_NODES = 100_000
"""Nodes a config document may expand to, aliases counted as often as they are used."""

_MERGE = "tag:yaml.org,2002:merge"


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice in one mapping."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: PyYAML says so itself
                continue
            if repeated:
                raise _Duplicate(key, key_node.start_mark.line + 1)
        return super().construct_mapping(node, deep=deep)


class _Duplicate(Exception):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(key, line)
        self.key, self.line = key, line


def _expanded(node: Node, memo: dict[int, int], open_: set[int]) -> int:
    """How many nodes ``node`` stands for with every alias expanded (memoized by node, so
    counting costs the document's size, not its expansion)."""
    at = id(node)
    if at in memo:
        return memo[at]
    if at in open_:
        raise RecursionError("an alias contains itself")
    open_.add(at)
    if isinstance(node, ScalarNode):
        count = 1
    elif isinstance(node, SequenceNode):
        count = 1 + sum(_expanded(n, memo, open_) for n in node.value)
    else:
        assert isinstance(node, MappingNode)
        count = 1 + sum(
            _expanded(k, memo, open_) + _expanded(v, memo, open_) for k, v in node.value
        )
    open_.discard(at)
    memo[at] = min(count, MAX_NODES + 1)  # saturate: the sum only has to pass the limit
    return memo[at]


def read_text(file: Path) -> str:
    """The file's text: a regular file of at most :data:`MAX_BYTES`, UTF-8."""
    shown = repr(str(file))
    try:
        with open(file, "rb", opener=_nonblocking) as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ConfigError(f"config file {shown} is not a regular file")
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"cannot read config file {shown}: {e.strerror}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"config file {shown} is over {MAX_BYTES >> 20} MiB: not a config")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"config file {shown} is not UTF-8 text (bad byte at offset {e.start})"
        ) from None


def _nonblocking(path: str, flags: int) -> int:
    """Open without blocking (a FIFO with no writer would block ``open`` itself)."""
    return os.open(path, flags | os.O_NONBLOCK)


def load_yaml(text: str, what: str) -> Any:
    """The document in ``text`` (None when empty), refused past :data:`MAX_NODES` nodes
    expanded, with a key given twice, or when not YAML; ``what`` names where it came from
    (``config file '/etc/icefloe.yaml'``)."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            size = _expanded(node, {}, set())
        except RecursionError:
            raise ConfigError(f"{what} holds an alias that contains itself") from None
        if size > MAX_NODES:
            raise ConfigError(
                f"{what} expands to over {MAX_NODES:,} values through its "
                "aliases (an alias bomb?): not read"
            )
        return loader.construct_document(node)
    except _Duplicate as d:
        raise ConfigError(
            f"{what} line {d.line}: key {d.key!r} is given twice in one mapping"
        ) from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        raise ConfigError(f"{what}{line} is not valid YAML") from None
    finally:
        loader.dispose()


def env_value(name: str, value: str) -> Any:
    """An ``ICEFLOE_*`` override's value: its YAML (numbers, lists, mappings), within the
    same bounds as a file, or the text itself when it is not YAML; ``""`` stays ``""``."""
    if value == "":
        return ""
    try:
        return load_yaml(value, f"environment override {name!r}")
    except ConfigError as e:
        if "not valid YAML" in str(e):
            return value
        raise

"""The in-memory layout store: the same semantics as
:class:`icefloe.state.layout.redis.RedisLayouts` (one contract suite,
``tests/support/contracts/layout.py``), for unit tests."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from icefloe.optimizer.layout import Depth, FileBounds
from icefloe.state.layout import LayoutDelta, LayoutMismatch, LayoutStore


class MemoryLayouts(LayoutStore):
    """Plain dicts; one call is one step, so every method is trivially atomic."""

    def __init__(self) -> None:
        self._files: dict[str, dict[str, dict[str, FileBounds[str]]]] = {}
        self._signature: dict[str, str] = {}
        self._depths: dict[str, dict[str, Depth]] = {}
        self._settled: dict[str, set[str]] = {}  # partitions kept as settled
        self._generation: dict[str, int] = {}

    def signature(self, table: str) -> str | None:
        return self._signature.get(table)

    def update(self, table: str, signature: str, deltas: Mapping[str, LayoutDelta]) -> None:
        if self._signature.get(table) != signature:
            raise LayoutMismatch(f"layout of {table} is not of {signature}")
        parts = self._files.setdefault(table, {})
        self._generation[table] = self._generation.get(table, 0) + 1
        for key, d in deltas.items():
            if not d.empty:
                self._depths.get(table, {}).pop(key, None)
            files = parts.setdefault(key, {})
            for path in d.deleted:
                files.pop(path, None)
            files.update(d.added)
            if not files:
                del parts[key]

    def replace(
        self,
        table: str,
        signature: str,
        files_by_partition: Mapping[str, Sequence[FileBounds[str]]],
    ) -> None:
        self._files[table] = {
            k: {f.id: f for f in files} for k, files in files_by_partition.items() if files
        }
        self._signature[table] = signature
        self._depths.pop(table, None)
        self._generation[table] = self._generation.get(table, 0) + 1

    def generation(self, table: str) -> int:
        return self._generation.get(table, 0)

    def save_depths(
        self,
        table: str,
        signature: str,
        measured: Mapping[str, Depth],
        generation: int,
        settled: Collection[str] = (),
    ) -> None:
        if self._signature.get(table) == signature and self.generation(table) == generation:
            self._depths.setdefault(table, {}).update(measured)
            marks = self._settled.setdefault(table, set())
            marks.difference_update(measured)
            marks.update(k for k in measured if k in settled)

    def saved_depths(self, table: str) -> dict[str, Depth]:
        return dict(self._depths.get(table, {}))

    def saved_settled(self, table: str) -> set[str]:
        kept = self._depths.get(table, {})
        return {k for k in self._settled.get(table, set()) if k in kept}

    def partitions(self, table: str) -> list[str]:
        return sorted(self._files.get(table, {}))

    def files(
        self, table: str, keys: Sequence[str] | None = None
    ) -> dict[str, list[FileBounds[str]]]:
        parts = self._files.get(table, {})
        wanted = sorted(parts) if keys is None else keys
        return {k: sorted(parts[k].values(), key=lambda f: f.id) for k in wanted if parts.get(k)}

    def forget(self, table: str) -> None:
        self._files.pop(table, None)
        self._signature.pop(table, None)
        self._depths.pop(table, None)

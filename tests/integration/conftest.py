"""Fixtures of the cluster tests: the executors' bare Python and the archive, once per run
(:mod:`tests.integration.executor_python`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.executor_python import BarePython, PackedArchive, make_bare_python


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> BarePython:
    """A Python with nothing installed, as on a cluster node (see :func:`make_bare_python`)."""
    return make_bare_python(tmp_path_factory.mktemp("bare-python"))


@pytest.fixture(scope="session")
def executor_archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PackedArchive]:
    """The executors' archive, packed in the background (see :class:`PackedArchive`)."""
    archive = PackedArchive(tmp_path_factory.mktemp("pack") / "deps.tar.gz")
    try:
        yield archive
    finally:
        archive.stop()

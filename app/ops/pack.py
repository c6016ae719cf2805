"""The Python the Arrow engine needs on a cluster's executors, as one Spark archive.

On a cluster the Arrow engine's groups run as Spark Python tasks, in the executors'
Python, which has PySpark (Spark ships it) but not PyIceberg, pyarrow or icefloe. Spark's
answer is ``spark.archives``: an archive extracted into every executor's working
directory. :func:`build_archive` packs exactly what ``icefloe.jobs.rewrite.arrow_engine`` imports:

* the installed distributions that ``pyiceberg[pyarrow,pyiceberg-core]`` needs, found by
  walking their requirements (markers and extras evaluated as pip would) in this
  interpreter's environment, so the executors get the very versions the driver has;
* icefloe's own ``jobs`` and ``optimizer`` packages (sources only).

PySpark, py4j and pyspark-client are left out: the executors' Spark provides its own.
The config key ``spark.executor_deps`` names the archive; ``icefloe.base.spark.spark_conf``
then adds it to ``spark.archives`` and puts it on the executors' ``PYTHONPATH``. As with
any PySpark job, the executors' Python must be the driver's minor version on the same
platform (the archive holds compiled extensions). The archive is deterministic: the same
environment packs to the same bytes.
"""

from __future__ import annotations

import gzip
import importlib.metadata as md
import importlib.util
import io
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from icefloe.base.errors import UsageError

ROOTS = ("pyiceberg[pyarrow,pyiceberg-core]", "numpy")
"""What ``icefloe.jobs.rewrite`` imports on the executors (besides icefloe itself; numpy: z-order
keys)."""

PROVIDED = frozenset({"pyspark", "pyspark-client", "py4j"})
"""Distributions the executors already have: Spark ships them."""

OWN_PACKAGES = ("icefloe.jobs", "icefloe.optimizer")
"""icefloe's packages the executors need, under the ``icefloe`` root (the rest stays on the
driver)."""

_PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Packed:
    path: Path
    distributions: tuple[str, ...]  # "name==version", sorted
    files: int
    bytes: int


def _canonical(name: str) -> str:
    return str(canonicalize_name(name))


def closure(roots: Iterable[str] = ROOTS) -> list[md.Distribution]:
    """The installed distributions ``roots`` need, themselves included (minus ``PROVIDED``).

    Requirement markers are evaluated for this interpreter and the extras asked for, so
    ``pyiceberg[pyarrow]`` pulls pyarrow while plain ``pyiceberg`` does not. Raises
    :class:`UsageError` naming a requirement that is not installed.
    """
    found: dict[str, md.Distribution] = {}
    visited: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = _canonical(req.name)
        key = (name, frozenset(req.extras))
        if name in PROVIDED or key in visited:
            continue
        visited.add(key)
        try:
            dist = found.get(name) or md.distribution(req.name)
        except md.PackageNotFoundError:
            raise UsageError(
                f"cannot pack {req.name!r}: it is not installed in {_PROJECT_ROOT / '.venv'}"
            ) from None
        found[name] = dist
        wanted = [{"extra": e} for e in sorted(req.extras)] or [{"extra": ""}]
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate(env) for env in wanted):
                todo.append(sub)
    return sorted(found.values(), key=lambda d: _canonical(d.metadata["Name"]))


def _dist_files(dist: md.Distribution) -> Iterator[tuple[str, Path]]:
    """(name in the archive, file on disk): the distribution's files under site-packages."""
    if dist.files is None:  # no RECORD: the files of the distribution cannot be known
        raise UsageError(
            f"cannot pack {dist.metadata['Name']!r}: it was installed without a file list "
            "(RECORD); reinstall it with pip"
        )
    for rel in dist.files:
        name = rel.as_posix()
        if (
            ".." in rel.parts
            or name.startswith("/")
            or "__pycache__" in rel.parts
            or name.endswith(".pyc")
        ):
            continue  # scripts outside site-packages, byte-code (rebuilt on the executor)
        path = Path(str(dist.locate_file(rel)))
        if path.is_file():
            yield name, path


def _own_files() -> Iterator[tuple[str, Path]]:
    """``icefloe/__init__.py`` and every source of :data:`OWN_PACKAGES`, named by its import
    path (``icefloe/jobs/...``), wherever the folder is (a checkout maps ``icefloe.jobs`` to
    ``jobs/``, a wheel installs it under ``icefloe/``)."""
    root = importlib.util.find_spec("icefloe")
    assert root is not None and root.origin is not None
    yield "icefloe/__init__.py", Path(root.origin)
    for package in OWN_PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations
        folder = Path(list(spec.submodule_search_locations)[0])
        prefix = package.replace(".", "/")
        for path in sorted(folder.rglob("*.py")):
            yield f"{prefix}/{path.relative_to(folder).as_posix()}", path


def build_archive(output: Path, roots: Iterable[str] = ROOTS) -> Packed:
    """Write the executors' archive (``.tar.gz``) to ``output``; return what it holds."""
    if not output.name.endswith((".tar.gz", ".tgz")):
        raise UsageError(f"bad archive name {output.name!r}: expected a .tar.gz or .tgz file")
    dists = closure(roots)
    members: dict[str, Path] = {}
    for dist in dists:
        members.update(_dist_files(dist))
    members.update(_own_files())
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    total = 0
    # gzip's own header carries a timestamp: fixed at 0 so equal inputs give equal bytes
    with (
        open(partial, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0, filename="") as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name in sorted(members):
            data = members[name].read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
            total += len(data)
    partial.replace(output)  # never a half-written archive under the configured name
    names = tuple(f"{d.metadata['Name']}=={d.version}" for d in dists)
    return Packed(output, names, len(members), total)

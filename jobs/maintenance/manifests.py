"""Manifest rewrites small enough for the driver: Iceberg's ``RewriteManifests``, no Spark job.

Iceberg's ``rewrite_manifests`` procedure reads and writes manifests with Spark jobs and
sorts the entries by partition: right for a table whose manifests run to gigabytes, but
on a streaming table, whose problem is a few dozen kilobyte-sized manifests, its fixed
cost (job scheduling, a cached Dataset, two stages) is most of a second per call. The
core API (``table.rewriteManifests()``) does the same rewrite in the driver: it reads the
chosen manifests' live entries and writes them into new manifests that roll at the
table's ``commit.manifest.target-size-bytes``, and commits one ``replace`` snapshot whose
files are exactly its parent's. On the benchmark's tables it takes about a tenth of the
procedure's time.

It is used only when the output is one manifest per partition spec (the small data
manifests fit in the manifest target): the entries then need no clustering by partition,
which the core API cannot take from Python without a Java lambda (the cluster key here is
a constant, built from ``MethodHandles``). Delete manifests stay as they are (the core
API never rewrites them); when many small ones have piled up, or the small data manifests
would fill more than one manifest, :func:`driver_rewrite` returns None and the caller runs
Iceberg's procedure, which handles both and clusters by partition.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

from icefloe.base.errors import OperationFailed
from icefloe.base.spark import activate
from icefloe.jobs.rewrite.java_errors import java_class_name, java_message

REWRITE_ID_PROPERTY = "icefloe.manifest-rewrite-id"
DATA, DELETES = 0, 1  # ManifestContent ids


def _constant_function(jvm: Any, key: str) -> Any:
    """A ``java.util.function.Function`` that maps every argument to ``key``."""
    handles = jvm.java.lang.invoke.MethodHandles
    obj = jvm.java.lang.Class.forName("java.lang.Object")
    arguments = jvm.java.util.ArrayList()
    arguments.add(obj)
    handle = handles.dropArguments(handles.constant(obj, key), 0, arguments)
    function = jvm.java.lang.Class.forName("java.util.function.Function")
    return jvm.java.lang.invoke.MethodHandleProxies.asInterfaceInstance(function, handle)


def _small(manifests: Any, target: int) -> list[Any]:
    return [m for m in (manifests.get(i) for i in range(manifests.size())) if m.length() < target]


def _committed(table: Any, rewrite_id: str) -> Any:
    """This rewrite's snapshot: the current one, or an ancestor if a writer committed since."""
    node = table.currentSnapshot()
    while node is not None and node.summary().get(REWRITE_ID_PROPERTY) != rewrite_id:
        parent = node.parentId()
        node = None if parent is None else table.snapshot(parent)
    if node is None:
        raise OperationFailed(f"manifest rewrite {rewrite_id} committed but is not in the history")
    return node


def driver_rewrite(
    spark: Any, table_name: str, target: int, max_delete_manifests: int
) -> dict[str, Any] | None:
    """Merge the current snapshot's data manifests under ``target`` bytes into one, in the
    driver; the result (Iceberg's procedure's columns), or None when the rewrite is not
    for the driver (see the module doc). ``table_name``: Spark's name (``lake.db.t``)."""
    jvm = cast(Any, spark.sparkContext._jvm)
    activate(spark)
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, table_name
    )
    table.refresh()
    snapshot = table.currentSnapshot()
    if snapshot is None:
        return {"rewritten_manifests_count": 0, "added_manifests_count": 0}
    io = table.io()
    small = _small(snapshot.dataManifests(io), target)
    small_deletes = _small(snapshot.deleteManifests(io), target)
    if sum(int(m.length()) for m in small) > target or len(small_deletes) > max_delete_manifests:
        return None
    if len(small) < 2:
        return {"rewritten_manifests_count": 0, "added_manifests_count": 0}
    chosen = jvm.java.util.HashSet()
    for m in small:
        chosen.add(m)  # ManifestFile equality is by path: a re-applied commit still matches
    predicates = jvm.org.apache.iceberg.relocated.com.google.common.base.Predicates
    rewrite_id = str(uuid.uuid4())
    try:
        (
            table.rewriteManifests()
            .clusterBy(_constant_function(jvm, "manifest"))
            .rewriteIf(getattr(predicates, "in")(chosen))
            .set(REWRITE_ID_PROPERTY, rewrite_id)
            .commit()
        )
    except Exception as e:
        raise OperationFailed(
            f"rewrite_manifests on {table_name} failed ({java_class_name(e)}: {java_message(e)})"
        ) from e
    table.refresh()
    summary = _committed(table, rewrite_id).summary()
    return {
        "rewritten_manifests_count": int(summary.get("manifests-replaced") or 0),
        "added_manifests_count": int(summary.get("manifests-created") or 0),
        "engine": "driver",
    }

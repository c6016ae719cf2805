"""Which of a table's write properties the Arrow engine honours, and which send the
table's groups to Spark's writer.

Spark's Iceberg writer applies every ``write.*`` property of the table. The Arrow engine
(:mod:`icefloe.jobs.rewrite.arrow_engine`) writes with pyarrow and honours exactly these:

* **in the file it writes**: ``write.parquet.compression-codec`` and
  ``write.parquet.compression-level``, ``write.parquet.page-size-bytes``,
  ``write.parquet.page-row-limit`` and ``write.parquet.dict-size-bytes`` (PyIceberg's
  writer options); row groups (:func:`row_group_rows`) of at most
  ``write.parquet.row-group-limit`` rows (PyIceberg's) and at most
  ``write.parquet.row-group-size-bytes`` (Iceberg's; 128 MiB by default) counted
  uncompressed, so never larger than Spark's writer makes them, which by default counts
  encoded bytes (``row-group-size-track-uncompressed`` and the ``row-group-check-*``
  counts only tune when Spark's writer looks: the Arrow engine sizes each row group from
  its rows' size);
* **around it**: ``write.target-file-size-bytes`` (the planner sizes every output),
  ``write.metadata.metrics.*`` (the new files' metrics are Iceberg's own, built in the
  JVM from each file's footer with the table's ``MetricsConfig``:
  :mod:`icefloe.jobs.rewrite.new_files`), and where files go (``write.data.path``,
  ``write.object-storage.*``, ``write.folder-storage.path``,
  ``write.location-provider.impl``: new locations come from the table's own location
  provider, :func:`icefloe.jobs.rewrite.locations.new_locations`);
* a per-column flag at the value pyarrow writes anyway: ``bloom-filter-enabled`` false,
  ``stats-enabled`` and ``dict-encoding-enabled`` true; and the bloom filters' tuning
  (``bloom-filter-max-bytes``, ``-fpp``, ``-ndv``, ``-adaptive-enabled``) while no column
  has one (Spark's writer then writes none either).

Every other ``write.parquet.*`` property (bloom filters, page version, statistics or
dictionaries turned off for a column, variant shredding, and any key this list does not
know) changes the file Spark would write: a table that sets one gets Spark's writer for
every group. Properties that never touch a
data file's bytes (delete files, manifests, metadata files, commit modes, distribution,
isolation, Spark-only switches, other file formats) do not matter here. A format version
3 table keeps row lineage (``_row_id``, ``_last_updated_sequence_number``), which only
Spark's writer carries over into the new files: its groups go to Spark too.

Standard library only: this module runs where :mod:`icefloe.jobs.rewrite.arrow_engine` runs.
"""

from __future__ import annotations

from collections.abc import Mapping

HONOURED = frozenset(
    {
        "write.format.default",  # parquet only: any other format is not eligible at all
        "write.parquet.compression-codec",
        "write.parquet.compression-level",
        "write.parquet.page-size-bytes",
        "write.parquet.page-row-limit",
        "write.parquet.dict-size-bytes",
        "write.parquet.row-group-limit",
        "write.parquet.row-group-size-bytes",
        "write.parquet.row-group-size-track-uncompressed",
        "write.parquet.row-group-check-min-record-count",
        "write.parquet.row-group-check-max-record-count",
        "write.target-file-size-bytes",
        "write.data.path",
        "write.folder-storage.path",
        "write.location-provider.impl",
    }
)
"""Write properties the Arrow engine applies exactly as Spark's writer does."""

HONOURED_PREFIXES = ("write.metadata.metrics.", "write.object-storage.")
"""Families honoured as a whole (metrics by the JVM, locations by the table's provider)."""

HONOURED_WHEN = {
    "write.parquet.bloom-filter-enabled.column.": "false",
    "write.parquet.stats-enabled.column.": "true",
    "write.parquet.dict-encoding-enabled.column.": "true",
}
"""Per-column flags honoured at the one value pyarrow writes anyway."""

NO_DATA_FILE_EFFECT = (
    "write.delete.",
    "write.update.",
    "write.merge.",
    "write.manifest.",
    "write.metadata.",  # metadata files (their codec, path, history); metrics: above
    "write.summary.",
    "write.spark.",
    "write.distribution-mode",
    "write.wap.enabled",
    "write.upsert.enabled",
    "write.avro.",
    "write.orc.",
    "write.py-location-provider.impl",
)
"""Prefixes of write properties that do not change a data file Parquet writers write."""

BLOOM_ENABLED = "write.parquet.bloom-filter-enabled.column."
BLOOM_TUNING = (
    "write.parquet.bloom-filter-max-bytes",
    "write.parquet.bloom-filter-fpp.column.",
    "write.parquet.bloom-filter-ndv.column.",
    "write.parquet.bloom-filter-adaptive-enabled",
)
"""How bloom filters are built: no matter while no column has one."""

LINEAGE_VERSION = 3
"""The first format version with row lineage."""


def unhonoured(properties: Mapping[str, str]) -> list[str]:
    """The table's write properties (``key=value``, sorted) that the Arrow engine cannot
    honour: every ``write.*`` key that changes a data file and is not honoured."""
    blooms = any(
        k.startswith(BLOOM_ENABLED) and str(v).strip().lower() == "true"
        for k, v in properties.items()
    )
    found = []
    for key, value in properties.items():
        if not key.startswith("write.") or _honoured(key, str(value)):
            continue
        if key.startswith(BLOOM_TUNING) and not blooms:
            continue
        if key.startswith(HONOURED_PREFIXES) or key.startswith(NO_DATA_FILE_EFFECT):
            continue
        found.append(f"{key}={value}")
    return sorted(found)


def _honoured(key: str, value: str) -> bool:
    if key in HONOURED:
        return True
    return any(
        key.startswith(prefix) and value.strip().lower() == wanted
        for prefix, wanted in HONOURED_WHEN.items()
    )


def spark_only_reason(properties: Mapping[str, str], format_version: int) -> str:
    """Why none of the table's groups may go to the Arrow engine ("" when they may)."""
    if format_version >= LINEAGE_VERSION:
        return (
            f"format version {format_version}: only Spark's writer keeps row lineage "
            "(_row_id, _last_updated_sequence_number)"
        )
    keys = unhonoured(properties)
    if not keys:
        return ""
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return f"the Arrow engine does not honour the table's {', '.join(keys[:3])}{more}"


ROW_GROUP_LIMIT, ROW_GROUP_LIMIT_DEFAULT = "write.parquet.row-group-limit", 1 << 20
ROW_GROUP_BYTES, ROW_GROUP_BYTES_DEFAULT = "write.parquet.row-group-size-bytes", 128 << 20


def row_group_rows(properties: Mapping[str, str], rows: int, nbytes: int) -> int:
    """Rows per row group for a file of ``rows`` rows that take ``nbytes`` in memory
    (uncompressed): at most ``write.parquet.row-group-limit`` rows and at most
    ``write.parquet.row-group-size-bytes`` bytes (defaults: PyIceberg's and Iceberg's)."""
    limit = _positive(properties.get(ROW_GROUP_LIMIT), ROW_GROUP_LIMIT_DEFAULT)
    size = _positive(properties.get(ROW_GROUP_BYTES), ROW_GROUP_BYTES_DEFAULT)
    if rows > 0 and nbytes > 0:
        limit = min(limit, size * rows // nbytes)
    return max(1, limit)


def _positive(value: str | None, default: int) -> int:
    try:
        number = int(str(value).strip()) if value is not None else default
    except ValueError:
        return default
    return number if number > 0 else default

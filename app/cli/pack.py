"""``icefloe pack``: the archive of icefloe's own modules that Spark executors import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from icefloe.app.cli.common import Context, emit, make_console, pass_ctx

console = make_console()


MIB = 1 << 20


_json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


@click.command()
@click.option(
    "--output",
    default="dist/icefloe-executor-deps.tar.gz",
    show_default=True,
    metavar="PATH",
    help="Where to write the archive (relative paths: under the project home).",
)
@_json_option
@pass_ctx
def pack(ctx: Context, output: str, as_json: bool) -> None:
    """Pack what the Arrow engine needs on a cluster's executors (PyIceberg, pyarrow and
    icefloe's job code, at this environment's versions) into one Spark archive; set
    `spark.executor_deps` to it."""
    # start-up: tarfile, gzip and packaging only for pack
    from icefloe.app.ops.pack import build_archive

    path = Path(output) if Path(output).is_absolute() else Path(ctx.cfg.home) / output
    packed = build_archive(path)
    data = {
        "archive": str(packed.path),
        "bytes": packed.path.stat().st_size,
        "files": packed.files,
        "distributions": list(packed.distributions),
        "config": {"spark": {"executor_deps": str(packed.path)}},
    }

    def render(d: dict[str, Any]) -> None:
        console.print(
            f"packed {d['files']} files of {len(d['distributions'])} distributions and icefloe "
            f"into {d['archive']} ({d['bytes'] / MIB:.1f} MiB)\n"
            f"use it on a cluster: spark.executor_deps: {d['archive']}  (or "
            f"ICEFLOE_SPARK__EXECUTOR_DEPS={d['archive']}; where the cluster cannot fetch a "
            "local path, copy it to shared storage and give its s3:// or hdfs:// URI)"
        )

    emit(data, as_json, render)


COMMANDS = [pack]

"""``icefloe sql-server``: a Spark Connect server with icefloe's Spark conf (the catalog, the
jars, Iceberg's and icefloe's SQL extensions), in the foreground (icefloe.app.ops.sql_server).

Clients connect with ``SparkSession.builder.remote("sc://HOST:PORT")`` (PySpark, or any
Spark Connect client). No Thrift/JDBC variant: a Thrift server would need a Hive metastore
of its own (``spark.sql.catalogImplementation=hive``); Spark Connect needs nothing more.
"""

from __future__ import annotations

import shlex

import click

from icefloe.app.cli.common import Context, IntRange, pass_ctx
from icefloe.app.ops.sql_server import DEFAULT_HOST, DEFAULT_PORT, ServerPlan, plan_server, serve


@click.command("sql-server")
@click.option(
    "--port",
    type=IntRange(1, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The Spark Connect (gRPC) port.",
)
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    help="Address to listen on; 0.0.0.0 for every interface (Spark Connect itself "
    "authenticates nobody: expose it only behind a proxy that does).",
)
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="Print the spark-submit command (secrets left out), do not run it.",
)
@pass_ctx
def sql_server(ctx: Context, port: int, host: str, print_only: bool) -> None:
    """Run a Spark Connect server with the config's catalog and both SQL extensions until
    SIGTERM or Ctrl-C. Connect with SparkSession.builder.remote("sc://localhost:PORT").
    No Thrift/JDBC server; for a SQL shell, spark-sql (README: Skew-aware SQL)."""
    cfg = ctx.cfg
    if print_only:
        plan = plan_server(cfg, port, host)
        props = "<0600 properties file: the secrets>" if plan.secrets else None
        click.echo(" ".join(shlex.quote(a) for a in plan.argv(props)))
        return

    def ready(plan: ServerPlan, pid: int) -> None:
        shown = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
        click.echo(
            f"icefloe sql-server: Spark Connect at sc://{shown}:{port} (pid {pid}, catalog "
            f"{cfg.catalog.name!r}, extensions {plan.conf['spark.sql.extensions']}); "
            f"log: {plan.log_file}; Ctrl-C or SIGTERM stops it",
            err=True,
        )

    serve(cfg, port, host, on_ready=ready)
    click.echo("icefloe sql-server: stopped", err=True)


COMMANDS = [sql_server]

"""``icefloe sql-server``: a Spark Connect server with icefloe's Spark conf (the catalog, the
jars, Iceberg's and icefloe's SQL extensions), in the foreground (icefloe.app.ops.sql_server).

Clients connect with ``SparkSession.builder.remote(URL)``, the URL (token included) printed
once the server listens. A token guards it: a fresh one each start, or the first line of
``--token-file`` (or ``$SPARK_CONNECT_AUTHENTICATE_TOKEN``); ``--no-token`` only on a
loopback address. No Thrift/JDBC variant: a Thrift server would need a Hive metastore of
its own (``spark.sql.catalogImplementation=hive``); Spark Connect needs nothing more.
"""

from __future__ import annotations

import shlex

import click

from icefloe.app.cli.common import Context, IntRange, pass_ctx
from icefloe.app.cli.token import new_token, read_token, refuse_token_option
from icefloe.app.ops.sql_server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    TOKEN_ENV,
    Address,
    ServerPlan,
    client_url,
    plan_server,
    resolve_host,
    serve,
)
from icefloe.base.errors import UsageError


def _server_token(host: str, address: Address, given: str | None, no_token: bool) -> str | None:
    """The token the server demands: the one given, a fresh one, or none (--no-token, on
    loopback only)."""
    if no_token and given is not None:
        raise UsageError(f"--no-token and a token (--token-file or {TOKEN_ENV}): choose one")
    if no_token and not address.loopback:
        raise UsageError(
            f"--host {host} is not a loopback address: it needs a token (drop --no-token)"
        )
    return None if no_token else given or new_token()


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
    help="Address to listen on (0.0.0.0: every interface; a client off this host sends its "
    "token only over TLS, so put a TLS proxy in front).",
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, readable=True),
    default=None,
    help="A file whose first line is the token clients must send (16 to 512 characters); "
    f"or the environment's {TOKEN_ENV}; default: a fresh token each start, printed once.",
)
@click.option(
    "--no-token",
    is_flag=True,
    help="No token (loopback only): then any local user can connect and act as you.",
)
@click.option("--token", hidden=True, default=None)  # refused: it shows in the process list
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="Print the spark-submit command (secrets and token left out), do not run it.",
)
@pass_ctx
def sql_server(
    ctx: Context,
    port: int,
    host: str,
    token_file: str | None,
    no_token: bool,
    token: str | None,
    print_only: bool,
) -> None:
    """Run a Spark Connect server with the config's catalog and both SQL extensions until
    SIGTERM or Ctrl-C; it prints the sc:// URL (with its token) to connect with. An
    authenticated client runs code as the user of this server (docs: sql-server)."""
    refuse_token_option(token, TOKEN_ENV)
    address = resolve_host(host)
    given = read_token(token_file, TOKEN_ENV)
    secret = _server_token(host, address, given, no_token)
    cfg = ctx.cfg
    if print_only:
        plan = plan_server(cfg, port, address.ip)
        names = sorted(k for k in plan.env if k not in ("SPARK_HOME", "SPARK_LOCAL_IP"))
        hidden = f"  # + environment {', '.join(names)}" if names else ""
        click.echo(" ".join(shlex.quote(a) for a in plan.argv()) + hidden)
        return
    shown = secret if given is None else "<the token of " + (token_file or f"${TOKEN_ENV}") + ">"

    def ready(plan: ServerPlan, listening: Address, pid: int) -> None:
        click.echo(
            f"icefloe sql-server: listening on {listening.shown(port)}; connect with "
            f"{client_url(listening, port, shown)} (pid {pid}, catalog {cfg.catalog.name!r}, "
            f"extensions {plan.conf['spark.sql.extensions']}; log: {plan.log_file}); Ctrl-C "
            "or SIGTERM stops it",
            err=True,
        )
        if not listening.loopback:
            click.echo(
                "icefloe sql-server: off this host a client sends its token only over TLS "
                "(sc://HOST:PORT/;token=...;use_ssl=true): put a TLS proxy in front",
                err=True,
            )

    serve(cfg, port, address.ip, token=secret, on_ready=ready)
    click.echo("icefloe sql-server: stopped", err=True)


COMMANDS = [sql_server]

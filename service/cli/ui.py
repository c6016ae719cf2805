"""``icefloe ui``: the web dashboard (``service.web``): tables by health, partitions by
entropy, file-size histograms, entropy over time, the queue, leases, deciders and actors,
recent actions and their savings, the stored skew reports."""

from __future__ import annotations

import click

from service.base.redact import register_secrets
from service.cli.common import Context, pass_ctx
from service.web.server import make_server


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--token",
    envvar="ICEFLOE_UI_TOKEN",
    default=None,
    help="Required off loopback: requests carry it (Bearer header or ?token=). "
    "Env ICEFLOE_UI_TOKEN.",
)
@pass_ctx
def ui(ctx: Context, host: str, port: int, token: str | None) -> None:
    """Serve the dashboard (127.0.0.1 by default; any other address needs --token)."""
    register_secrets([token])  # never printed, in an error or a log line
    server = make_server(ctx.cfg, host, port, token)
    hint = " (open it with ?token=<the token>)" if token else ""
    click.echo(f"icefloe ui: serving {server.url}{hint}; Ctrl-C stops", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.dashboard.close()


COMMANDS = [ui]

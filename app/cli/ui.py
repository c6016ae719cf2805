"""``icefloe ui``: the web dashboard (``icefloe.app.web``): tables by health, partitions by
entropy, file-size histograms, entropy over time, the queue, leases, deciders and actors,
recent actions and their savings, the stored skew reports."""

from __future__ import annotations

import click

from icefloe.app.cli.common import Context, IntRange, Terminated, pass_ctx
from icefloe.app.cli.token import read_token, refuse_token_option
from icefloe.app.web.server import make_server

TOKEN_ENV = "ICEFLOE_UI_TOKEN"


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, readable=True),
    default=None,
    help="A file whose first line is the token (16 to 512 characters), required off "
    "loopback (requests carry it: Bearer header or ?token=); or the environment's "
    f"{TOKEN_ENV}.",
)
@click.option("--token", hidden=True, default=None)  # refused: it shows in the process list
@pass_ctx
def ui(ctx: Context, host: str, port: int, token_file: str | None, token: str | None) -> None:
    """Serve the dashboard (127.0.0.1 by default; any other address needs a token of at
    least 16 characters, from --token-file or ICEFLOE_UI_TOKEN)."""
    refuse_token_option(token, TOKEN_ENV)
    secret = read_token(token_file, TOKEN_ENV)
    server = make_server(ctx.cfg, host, port, secret)
    hint = " (open it with ?token=<the token>)" if secret else ""
    click.echo(f"icefloe ui: serving {server.url}{hint}; Ctrl-C or SIGTERM stops it", err=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, Terminated):
        pass
    finally:
        server.server_close()
        server.dashboard.close()
    click.echo("icefloe ui: stopped", err=True)


COMMANDS = [ui]

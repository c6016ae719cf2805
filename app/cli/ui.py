"""``icefloe ui``: the web dashboard (``icefloe.app.web``): tables by health, partitions by
entropy, file-size histograms, entropy over time, the queue, leases, deciders and actors,
recent actions and their savings, the stored skew reports."""

from __future__ import annotations

import os
from pathlib import Path

import click

from icefloe.app.cli.common import Context, IntRange, pass_ctx
from icefloe.app.web.server import is_loopback, make_server
from icefloe.base.errors import UsageError
from icefloe.base.redact import register_secrets

MIN_TOKEN = 16
"""Characters a token needs off loopback (a short one is guessed by a scan)."""


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, readable=True),
    default=None,
    help="A file whose first line is the token, required off loopback (requests carry it: "
    "Bearer header or ?token=); or the environment's ICEFLOE_UI_TOKEN.",
)
@click.option("--token", hidden=True, default=None)  # refused: it shows in the process list
@pass_ctx
def ui(ctx: Context, host: str, port: int, token_file: str | None, token: str | None) -> None:
    """Serve the dashboard (127.0.0.1 by default; any other address needs a token of at
    least 16 characters, from --token-file or ICEFLOE_UI_TOKEN)."""
    if token is not None:
        raise UsageError(
            "--token would show the token in the process list: put it in ICEFLOE_UI_TOKEN "
            "or in a file for --token-file"
        )
    secret = _token(token_file)
    register_secrets([secret])  # never printed, in an error or a log line
    if secret and not is_loopback(host) and len(secret) < MIN_TOKEN:
        raise UsageError(
            f"the token is too short for --host {host}: {MIN_TOKEN} characters at least"
        )
    server = make_server(ctx.cfg, host, port, secret)
    hint = " (open it with ?token=<the token>)" if secret else ""
    click.echo(f"icefloe ui: serving {server.url}{hint}; Ctrl-C stops", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.dashboard.close()


def _token(token_file: str | None) -> str | None:
    """The token: the first line of ``token_file``, else ``$ICEFLOE_UI_TOKEN`` (None: none)."""
    if token_file is not None:
        lines = Path(token_file).read_text(encoding="utf-8").splitlines()
        if not lines or not lines[0].strip():
            raise UsageError(f"--token-file {token_file}: its first line holds no token")
        return lines[0].strip()
    return os.environ.get("ICEFLOE_UI_TOKEN") or None


COMMANDS = [ui]

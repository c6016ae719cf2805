"""``icefloe dev up|down|status``: the local backend servers of a profile (icefloe.app.ops.dev).

Output names where each service listens, its PID and log, and the overlay file: never a
secret (they stay in the 0600 ``state.json`` and overlay). ``status`` exits 0 when every
service of the profile runs and 1 otherwise, like ``systemctl is-active``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from icefloe.app.cli.common import emit
from icefloe.app.ops.dev import DEFAULT_ROOT, PROFILES
from icefloe.app.ops.dev import down as stop
from icefloe.app.ops.dev import down_all as stop_all
from icefloe.app.ops.dev import status as probe
from icefloe.app.ops.dev import up as start
from icefloe.base.config import dev_root


def _shown(path: Path) -> str:
    """``path`` relative to the working folder when it is inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _options(command: Any) -> Any:
    command = click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Folder of the profiles' data, logs and state (default: the project's .dev/).",
    )(command)
    return click.option(
        "--profile",
        type=click.Choice(PROFILES),
        default=lambda: os.environ.get("ICEFLOE_PROFILE") or "embedded",
        show_default="env ICEFLOE_PROFILE, else embedded",
        help="Backend profile.",
    )(command)


def _root(root: Path | None) -> Path:
    """``--root``, else ``$ICEFLOE_DEV_ROOT`` (where ``ICEFLOE_PROFILE`` looks), else .dev/."""
    if root is not None:
        return root
    return dev_root(os.environ) if os.environ.get("ICEFLOE_DEV_ROOT") else DEFAULT_ROOT


@click.group()
def dev() -> None:
    """Local backend servers for a profile: embedded, postgres (PostgreSQL 15) or rest-s3
    (Iceberg's REST catalog server and s3proxy), all on 127.0.0.1."""


@dev.command()
@_options
@click.option("--free-ports", is_flag=True, help="Pick free ports instead of 5433/9000/8181.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def up(profile: str, root: Path | None, free_ports: bool, as_json: bool) -> None:
    """Start the profile's services unless they run, and write its config overlay."""
    state = start(profile, _root(root), free_ports=free_ports)
    data = {
        "profile": profile,
        "overlay": str(state.root / profile / "icefloe.yaml"),
        "services": [
            {
                "name": s.name,
                "address": s.address,
                "pid": s.pid,
                "log": str(s.log),
                "started": s.name in state.started,
            }
            for s in state.services
        ],
    }

    def render(d: dict[str, Any]) -> None:
        width = max([len(s["name"]) for s in d["services"]] + [8])
        for s in d["services"]:
            how = "started" if s["started"] else "already running"
            click.echo(
                f"{s['name']:<{width}}  {s['address']}  pid {s['pid']}  "
                f"log {_shown(Path(s['log']))}  ({how})"
            )
        if not d["services"]:
            click.echo(f"{profile}: no services to run")
        click.echo(
            f"{'overlay':<{width}}  {_shown(Path(d['overlay']))}  "
            f"(use it with ICEFLOE_PROFILE={profile})"
        )

    emit(data, as_json, render)


@dev.command()
@_options
@click.pass_context
def down(ctx: click.Context, profile: str, root: Path | None) -> None:
    """Stop what the root runs, whichever profile started it (--profile on the command
    line: that profile's services only); their data, ports and secrets stay for the next
    up."""
    given = ctx.get_parameter_source("profile") is ParameterSource.COMMANDLINE
    for line in stop(profile, _root(root)) if given else stop_all(_root(root)):
        click.echo(line)


@dev.command()
@_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(profile: str, root: Path | None, as_json: bool) -> None:
    """Whether each service of the profile runs (exit 0 when all do, else 1)."""
    rows = [
        {"name": s.name, "pid": s.pid, "address": s.address, "running": s.running}
        for s in probe(profile, _root(root))
    ]

    def render(rs: list[dict[str, Any]]) -> None:
        if not rs:
            click.echo(f"{profile}: no services")
        width = max([len(r["name"]) for r in rs] + [8])
        for r in rs:
            state = "running" if r["running"] else "stopped"
            pid = f"pid {r['pid']}" if r["pid"] and r["running"] else "-"
            click.echo(f"{r['name']:<{width}}  {r['address']}  {pid}  {state}")

    emit(rows, as_json, render)
    if not all(r["running"] for r in rows):
        raise SystemExit(1)


COMMANDS = [dev]

"""The backend profiles' servers in the fault suite: the REST catalog on S3 and PostgreSQL,
started once per run (the same ``icefloe dev up`` as the contract suite, in the run's
``dev_root``), stopped one at a time by a test to make them "down", started again after.

Stable names: :class:`Profile` (``config(path, namespace)``, ``stop(service)``,
``ensure_up()``), :func:`profile_tables` (a profile's config and tables on a fresh
namespace), :func:`settle` (the service back after an outage: the sweep, then the table as
it was), and the session fixtures ``rest_s3`` and ``postgres`` of
``tests/faults/conftest.py``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from icefloe.base.catalog import load_catalog
from icefloe.base.config import build_config
from icefloe.base.keys import Keys
from icefloe.jobs.maintenance.orphans import cleaner
from icefloe.state.intents import sweep
from icefloe.state.intents.redis import RedisIntents
from tests.contract.checks import assert_intact, stored_files
from tests.faults.harness import make_table
from tests.support.config import config_raw

# what s3proxy (Jetty), the REST server (Java) and PostgreSQL log when their port is taken
BIND_FAILED = re.compile(r"Address already in use|Failed to bind|could not bind")


@dataclass
class Profile:
    """One profile's running services and the catalog section that points at them."""

    name: str
    root: Path
    catalog: dict[str, Any]
    secrets: list[str] = field(default_factory=list)

    def config(self, path: Path, home: Path, redis_url: str, namespace: str) -> Path:
        """A config file on this profile's catalog, the given Redis, managing ``namespace``."""
        raw = config_raw(
            home,
            catalog={**self.catalog, "name": f"f_{self.name.replace('-', '_')}"},
            redis={"url": redis_url, "key_prefix": f"faults-{namespace}"},
            managed={"namespaces": [namespace]},
        )
        path.write_text(yaml.safe_dump(raw))
        path.chmod(0o600)
        return path

    def stop(self, service: str) -> None:
        """Kill one service (SIGKILL: down, not shut down cleanly); wait until its process
        is gone, reaped included (PostgreSQL refuses to start while the pid its lock file
        names still exists, even as a zombie)."""
        from icefloe.app.ops import dev

        pid = next(s.pid for s in dev.status(self.name, self.root) if s.name == service)
        assert pid, f"{service} is not running"
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while any(s.running for s in dev.status(self.name, self.root) if s.name == service):
            assert time.monotonic() < deadline, f"{service} did not stop"
            time.sleep(0.1)
        while _exists(pid):
            assert time.monotonic() < deadline, f"{service} (pid {pid}) was never reaped"
            time.sleep(0.05)

    def status(self) -> list[Any]:
        """``icefloe dev status`` of the profile: each service's PID, address, running."""
        from icefloe.app.ops import dev

        return list(dev.status(self.name, self.root))

    def ensure_up(self, attempts: int = 3) -> None:
        """Every service of the profile running again (same data, same ports). A service
        that cannot have its port back (another process took it while the service was
        down: ``icefloe dev`` picks ports no outgoing connection takes, yet any process may
        bind one) is started again a few times, then fails naming the port and its holder."""
        from icefloe.app.ops import dev
        from icefloe.base.errors import ServiceUnavailable

        pdir = dev.profile_dir(self.name, self.root)
        for attempt in range(1, attempts + 1):
            services = dev.status(self.name, self.root)
            logs = {s.address: _LogTail(pdir / f"{s.name}.log") for s in services}
            try:
                dev.up(self.name, self.root, free_ports=True)
                return
            except ServiceUnavailable as e:
                taken = [a for a, log in logs.items() if _port_race(a, log, str(e))]
                if not taken:
                    raise
                if attempt == attempts:
                    holders = "; ".join(f"{a} held by {_holder(a)}" for a in taken)
                    raise AssertionError(
                        f"{self.name}: a service could not listen on its port again after "
                        f"{attempts} starts, another process took it while it was down "
                        f"({holders}): {e}"
                    ) from None
                time.sleep(2.0)


def _port_race(address: str, log: _LogTail, error: str) -> bool:
    """Whether the service on ``address`` failed to start for its port: taken before the
    start (``icefloe dev``'s check) or while it started (its log)."""
    port = address.rsplit(":", 1)[-1]
    checked = f"port {port} on " in error and "is taken by another process" in error
    return checked or BIND_FAILED.search(log.new()) is not None


class _LogTail:
    """What a log gained since this was made."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size if path.exists() else 0

    def new(self) -> str:
        try:
            with self.path.open("rb") as f:
                f.seek(self.size)
                return f.read().decode(errors="replace")
        except OSError:
            return ""


def _holder(address: str) -> str:
    """Who has a socket on ``address`` (``ss``'s process column), or ``unknown``."""
    port = address.rsplit(":", 1)[1]
    out = subprocess.run(
        ["ss", "-Htanp", f"( sport = :{port} )"], capture_output=True, text=True, check=False
    ).stdout
    users = [line.split("users:", 1)[1] for line in out.splitlines() if "users:" in line]
    return users[0] if users else "unknown"


def _exists(pid: int) -> bool:
    """Whether ``pid`` still exists; reaps it first when it is this process's dead child."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not ours (or already reaped): its parent reaps it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    return True


def start(profile: str, root: Path) -> Profile:
    from icefloe.app.ops import dev

    state = dev.up(profile, root, free_ports=True)
    catalog = dict(state.overlay.get("catalog", {}))
    secrets = build_config({"catalog": catalog}).secret_values()
    return Profile(profile, root, catalog, secrets)


def profile_tables(
    profile: Profile, redis_url: str, tmp_path: Path, names: tuple[str, ...] = ("t",)
) -> tuple[Path, Any, list[str]]:
    """A config file of ``profile`` on a fresh namespace, its catalog and ``names`` made there
    (two small files a day each)."""
    namespace = f"o_{uuid.uuid4().hex[:8]}"
    path = profile.config(tmp_path / "icefloe.yaml", tmp_path / "home", redis_url, namespace)
    raw = yaml.safe_load(path.read_text())
    catalog = load_catalog(build_config(raw, home=tmp_path / "home"))
    catalog.create_namespace(namespace)
    idents = [f"{namespace}.{n}" for n in names]
    for ident in idents:
        make_table(catalog, ident, files_per_day=2, rows_per_file=10)
    return path, catalog, idents


def settle(profile: Any, cfg: Any, client: Any, name: str, before: Any, ledger: Any) -> None:
    """The service back: the leader's sweep, then the table as it was and nothing left."""
    profile.ensure_up()
    catalog = load_catalog(cfg)
    intents = RedisIntents(client, Keys.for_config(cfg))
    sweep(intents, cleaner(catalog))
    assert intents.all() == []
    table = catalog.load_table(name)
    assert_intact(table, before)
    ledger.rows(before.rows)
    ledger.files(len(stored_files(table)))

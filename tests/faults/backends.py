"""The backend profiles' servers in the fault suite: the REST catalog on S3 and PostgreSQL,
started once per run (the same ``icefloe dev up`` as the contract suite, in the run's
``dev_root``), stopped one at a time by a test to make them "down", started again after.

Stable names: :class:`Profile` (``config(path, namespace)``, ``stop(service)``,
``ensure_up()``), and the session fixtures ``rest_s3`` and ``postgres`` of
``tests/faults/conftest.py``.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import config_raw


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
        from service.ops import dev

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

    def ensure_up(self) -> None:
        """Every service of the profile running again (same data, same ports)."""
        from service.ops import dev

        dev.up(self.name, self.root, free_ports=True)


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
    from service.ops import dev

    state = dev.up(profile, root, free_ports=True)
    catalog = dict(state.overlay.get("catalog", {}))
    from service.config import build_config

    secrets = build_config({"catalog": catalog}).secret_values()
    return Profile(profile, root, catalog, secrets)

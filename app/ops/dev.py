"""``icefloe dev``: the local services of a backend profile, and the config overlay to use them.

Profiles: ``embedded`` (no services: the SQLite catalog of the default config), ``postgres``
(a private PostgreSQL 15 cluster for PyIceberg's and Spark's JDBC catalog) and ``rest-s3``
(s3proxy, and Iceberg's REST catalog server keeping its own catalog in a SQLite file, its
tables under ``s3://warehouse/``). Everything lives under ``root/<profile>/``: the data
(it survives ``down``/``up``), one log per service, ``state.json`` (PIDs, ports and the
generated secrets) and ``icefloe.yaml``, the overlay the config layer reads; both files are
mode 0600. ``up`` is idempotent: a running service is left alone, a dead one restarted on
the same data and port, and nothing is ever started twice. No secret is ever printed or put
in an error message.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from icefloe.app.ops import servers
from icefloe.app.ops.servers import LOOPBACK, PgCluster, Service
from icefloe.base.config import PROFILES as CONFIG_PROFILES
from icefloe.base.errors import ServiceUnavailable, UsageError
from icefloe.base.redact import register_secrets
from icefloe.base.versions import PROJECT_ROOT

PROFILES: tuple[str, ...] = CONFIG_PROFILES  # the ones ICEFLOE_PROFILE accepts
SERVICES: dict[str, tuple[str, ...]] = {
    "embedded": (),
    "postgres": ("postgres",),
    "rest-s3": ("s3proxy", "rest"),  # in start order
}
DEFAULT_PORTS: dict[str, int] = {"postgres": 5433, "s3proxy": 9000, "rest": 8181}
DEFAULT_ROOT = PROJECT_ROOT / ".dev"
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class DevState:
    """A profile's services after ``up`` and the overlay that points icefloe at them."""

    profile: str
    root: Path
    services: tuple[Service, ...]
    overlay: dict[str, Any]  # YAML-shaped; holds the secrets: never print it
    started: tuple[str, ...] = ()  # the services this ``up`` started (the rest were running)


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    pid: int | None
    address: str
    running: bool


def profile_dir(profile: str, root: Path = DEFAULT_ROOT) -> Path:
    """``root/<profile>`` (absolute); a UsageError for an unknown profile."""
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    return Path(root).resolve() / profile


def overlay_path(profile: str, root: Path = DEFAULT_ROOT) -> Path:
    """Where ``up`` writes the profile's config overlay."""
    return profile_dir(profile, root) / "icefloe.yaml"


def overlay_for(
    profile: str, root: Path, ports: Mapping[str, int], secret: Mapping[str, str]
) -> dict[str, Any]:
    """The config overlay of ``profile``: catalog settings for its services (pure)."""
    base = Path(root).resolve() / profile
    if profile == "postgres":
        uri = (
            f"postgresql+psycopg://{servers.PG_ROLE}:{secret['postgres_password']}"
            f"@{LOOPBACK}:{ports['postgres']}/{servers.PG_ROLE}"
        )
        return {"catalog": {"type": "sql", "uri": uri, "warehouse": f"file://{base}/warehouse"}}
    if profile == "rest-s3":
        properties = {
            "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            "s3.endpoint": f"http://{LOOPBACK}:{ports['s3proxy']}",
            "s3.path-style-access": "true",
            "s3.access-key-id": secret["s3_access_key"],
            "s3.secret-access-key": secret["s3_secret_key"],
            "s3.region": servers.REGION,
            "client.region": servers.REGION,
        }
        return {
            "catalog": {
                "type": "rest",
                "uri": f"http://{LOOPBACK}:{ports['rest']}",
                "warehouse": f"s3://{servers.BUCKET}/",
                "properties": properties,
            }
        }
    return {}


def new_secrets(profile: str) -> dict[str, str]:
    """Fresh random credentials for the profile's services (URL-safe)."""
    if profile == "postgres":
        return {"postgres_password": secrets.token_urlsafe(24)}
    if profile == "rest-s3":
        return {
            "s3_access_key": "icefloe" + secrets.token_hex(8),
            "s3_secret_key": secrets.token_urlsafe(30),
        }
    return {}


# --- state.json ----------------------------------------------------------------------------


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` atomically to a file of mode 0600."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _load(pdir: Path) -> dict[str, Any]:
    path = pdir / "state.json"
    if not path.exists():
        return {"services": {}, "secrets": {}}
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ServiceUnavailable(f"cannot read {path}: {type(e).__name__}") from None
    state.setdefault("services", {})
    state.setdefault("secrets", {})
    return state


def _save(pdir: Path, state: Mapping[str, Any]) -> None:
    _write_private(pdir / "state.json", json.dumps(state, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def _locked(pdir: Path) -> Iterator[None]:
    """One ``up``/``down`` of a profile at a time."""
    pdir.mkdir(parents=True, exist_ok=True)
    with open(pdir / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _recorded(state: Mapping[str, Any], name: str) -> Service | None:
    rec = state["services"].get(name)
    if rec is None:
        return None
    return Service(name, rec["pid"], rec["host"], rec["port"], Path(rec["log"]), rec["marker"])


def _record(state: dict[str, Any], svc: Service) -> None:
    state["services"][svc.name] = {
        "pid": svc.pid,
        "host": svc.host,
        "port": svc.port,
        "log": str(svc.log),
        "marker": svc.marker,
    }


def _cluster(pdir: Path, state: dict[str, Any]) -> PgCluster:
    """The profile's PostgreSQL cluster: chosen once, then kept in the state."""
    if "pg_dir" not in state:
        state["pg_dir"] = str(servers.pg_cluster(pdir).base)
    base = Path(state["pg_dir"])
    return PgCluster(base, servers.PG_USER if os.geteuid() == 0 else None)


def postgres_dir(root: Path = DEFAULT_ROOT) -> Path | None:
    """Where the ``postgres`` profile's cluster lives (None before the first ``up``)."""
    pg_dir = _load(profile_dir("postgres", root)).get("pg_dir")
    return Path(pg_dir) if pg_dir else None


# --- up, down, status ----------------------------------------------------------------------


def _ready(svc: Service) -> bool:
    if svc.name == "postgres":
        return servers.postgres_ready(svc.port)
    if svc.name == "rest":
        return servers.http_status(f"http://{svc.address}/v1/config") == 200
    return servers.http_status(f"http://{svc.address}/") is not None


def _running(svc: Service | None) -> bool:
    return svc is not None and servers.alive(svc.pid, svc.marker) and _ready(svc)


def _port_for(
    name: str,
    recorded: Service | None,
    free_ports: bool,
    ports: Mapping[str, int],
    alone: bool = True,
) -> int:
    """The port ``name`` starts on: its recorded one (the overlay and the other services
    know it), else the one asked for, else a free one or the default. With ``free_ports``
    a recorded port another process took moves to a free one, when no other service of
    the profile runs (``alone``: none of them knows the old port)."""
    if recorded is not None:
        port = recorded.port
    elif name in ports:
        port = ports[name]
    elif free_ports:
        return servers.free_port()
    else:
        port = DEFAULT_PORTS[name]
    # a recorded port may still be held for a moment by its server, dying
    grace = 5.0 if recorded is not None and port == recorded.port else 0.0
    if servers.port_free(port, grace=grace):
        return port
    if recorded is not None and free_ports and alone and name not in ports:
        return servers.free_port()
    if recorded is None:
        fix = "start with free ports (`icefloe dev up --free-ports`)"
    elif free_ports:
        fix = "stop the profile's other services (`icefloe dev down`), then `dev up --free-ports`"
    else:
        fix = "move the profile's services to free ports (`icefloe dev up --free-ports`)"
    raise ServiceUnavailable(
        f"port {port} on {LOOPBACK} is taken by another process ({name} needs it): "
        f"stop that process, or {fix}"
    )


def _start(
    name: str, pdir: Path, state: dict[str, Any], port: int, ports: dict[str, int]
) -> Service:
    """Start one service on ``port`` and return it (with its PID) as recorded."""
    log = pdir / f"{name}.log"
    secret = state["secrets"]
    if name == "postgres":
        cluster = _cluster(pdir, state)
        servers.init_postgres(cluster, secret["postgres_password"], log)
        pid = servers.start_postgres(cluster, port, log)
        return Service(name, pid, LOOPBACK, port, log, f"-D {cluster.data} ")
    key, value = secret["s3_access_key"], secret["s3_secret_key"]
    if name == "s3proxy":
        pid = servers.start_s3proxy(pdir, port, log, key, value)
        return Service(name, pid, LOOPBACK, port, log, str(servers.s3proxy_properties(pdir)))
    pid = servers.start_rest(pdir, port, ports["s3proxy"], log, key, value)
    return Service(name, pid, LOOPBACK, port, log, servers.rest_marker(pdir))


def up(
    profile: str,
    root: Path = DEFAULT_ROOT,
    *,
    free_ports: bool = False,
    ports: Mapping[str, int] | None = None,
) -> DevState:
    """Start the profile's services unless they run; write ``state.json`` and the overlay.

    A service keeps the port it first started on; that is ``ports[name]`` if given, else a
    free one with ``free_ports``, else 5433/9000/8181. A taken port is a ServiceUnavailable
    naming it.
    """
    pdir = profile_dir(profile, root)
    with _locked(pdir):
        state = _load(pdir)
        fresh = new_secrets(profile)
        if state.get("profile") != profile or not set(fresh) <= set(state["secrets"]):
            state["profile"] = profile
            state["secrets"] = {**fresh, **state["secrets"]}  # generated once, then kept
            _save(pdir, state)
        register_secrets(state["secrets"].values())
        names = SERVICES[profile]
        recorded = {name: _recorded(state, name) for name in names}
        keep = {n: s for n, s in recorded.items() if s and servers.alive(s.pid, s.marker)}
        chosen = {
            n: _port_for(n, recorded[n], free_ports, ports or {}, alone=not keep)
            for n in names
            if n not in keep
        }
        all_ports = {**{n: s.port for n, s in keep.items()}, **chosen}
        started = []
        for name in names:
            if name in chosen:
                svc = _start(name, pdir, state, chosen[name], all_ports)
                _record(state, svc)
                _save(pdir, state)  # the PID first: a failed wait never leads to a second copy
                started.append(svc)
        services = tuple(s for s in (_recorded(state, n) for n in names) if s is not None)
        servers.wait_ready(services, _ready, START_TIMEOUT)
        if profile == "postgres" and (started or not state.get("database")):
            servers.create_database(all_ports["postgres"], state["secrets"]["postgres_password"])
            (pdir / "warehouse").mkdir(exist_ok=True)
            state["database"] = True
            _save(pdir, state)
        overlay = overlay_for(profile, pdir.parent, all_ports, state["secrets"])
        text = yaml.safe_dump(overlay, sort_keys=False) if overlay else "{}\n"
        path = overlay_path(profile, root)
        if not path.exists() or path.read_text() != text:
            _write_private(path, text)
        return DevState(profile, pdir.parent, services, overlay, tuple(s.name for s in started))


def status(profile: str, root: Path = DEFAULT_ROOT) -> list[ServiceStatus]:
    """Each of the profile's services: its recorded PID and address, and whether it runs."""
    state = _load(profile_dir(profile, root))
    out = []
    for name in SERVICES[profile]:
        svc = _recorded(state, name)
        if svc is None:
            out.append(ServiceStatus(name, None, "-", False))
        else:
            out.append(ServiceStatus(name, svc.pid, svc.address, _running(svc)))
    return out


def started_profiles(root: Path = DEFAULT_ROOT) -> list[str]:
    """The profiles with services that ``up`` has started under ``root`` (a state file)."""
    return [p for p in PROFILES if SERVICES[p] and (profile_dir(p, root) / "state.json").exists()]


def down_all(root: Path = DEFAULT_ROOT) -> list[str]:
    """Stop whatever ``root`` runs, whichever profile started it: :func:`down` of each of
    :func:`started_profiles`, each line after its profile's name."""
    profiles = started_profiles(root)
    if not profiles:
        return [f"{Path(root).resolve()}: no services (none was started there)"]
    return [f"{p} {line}" for p in profiles for line in down(p, root)]


def down(profile: str, root: Path = DEFAULT_ROOT) -> list[str]:
    """Stop the profile's services (data, ports and secrets stay); one line per service."""
    pdir = profile_dir(profile, root)
    if not SERVICES[profile]:
        return [f"{profile}: no services"]
    if not (pdir / "state.json").exists():
        return [f"{name}: not running" for name in reversed(SERVICES[profile])]
    lines = []
    with _locked(pdir):
        state = _load(pdir)
        for name in reversed(SERVICES[profile]):
            svc = _recorded(state, name)
            if svc is None or svc.pid is None or not servers.alive(svc.pid, svc.marker):
                lines.append(f"{name}: not running")
            else:
                if name == "postgres":
                    servers.stop_postgres(_cluster(pdir, state), svc)
                else:
                    servers.stop(svc.pid, svc.marker)
                lines.append(f"{name}: stopped (pid {svc.pid})")
            if svc is not None:
                state["services"][name]["pid"] = None
        _save(pdir, state)
    return lines

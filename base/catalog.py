"""The one place that turns the catalog config into PyIceberg and Spark catalog settings.

Both sides get the same catalog name and the same backing store, so a table written by
Spark is seen by PyIceberg and the other way round.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from icefloe.base.config import CatalogConfig, Config, parse_table_identifier
from icefloe.base.errors import (
    ConfigError,
    IcefloeError,
    OperationFailed,
    ServiceUnavailable,
    TableNotFound,
    describe,
)

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table


def pyiceberg_properties(cat: CatalogConfig) -> dict[str, str]:
    props = {"type": cat.type, "uri": cat.uri, "warehouse": cat.warehouse}
    props.update(cat.properties)
    return props


def _jdbc_url(uri: str) -> tuple[str, dict[str, str]]:
    """SQLAlchemy URL (what PyIceberg's sql catalog takes) → JDBC URL + credentials."""
    if uri.startswith("sqlite:///"):
        return "jdbc:sqlite:" + uri[len("sqlite:///") :], {}
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+", 1)[0]
    if scheme in ("postgresql", "postgres"):
        creds = {}
        if parts.username:
            creds["jdbc.user"] = parts.username
        if parts.password:
            creds["jdbc.password"] = parts.password
        host = parts.hostname or "localhost"
        port = f":{parts.port}" if parts.port else ""
        return f"jdbc:postgresql://{host}{port}{parts.path}", creds
    if uri.startswith("jdbc:"):
        return uri, {}
    raise ConfigError(
        f"config key 'catalog.uri' {re.sub(r'//[^@]*@', '//***@', uri)!r}: "
        "sql catalogs need sqlite:/// or postgresql:// URIs"
    )


def spark_catalog_conf(cat: CatalogConfig) -> dict[str, str]:
    """Spark conf entries that register ``cat`` as an Iceberg SparkCatalog of the same name."""
    prefix = f"spark.sql.catalog.{cat.name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.warehouse": cat.warehouse,
        # PyIceberg (the decider, the demo's ingest) commits too: never serve stale metadata.
        f"{prefix}.cache-enabled": "false",
    }
    if cat.type == "sql":
        url, creds = _jdbc_url(cat.uri)
        conf[f"{prefix}.type"] = "jdbc"
        conf[f"{prefix}.uri"] = url
        # PyIceberg's sql catalog creates the V1 tables; keep Java on the same schema.
        conf[f"{prefix}.jdbc.schema-version"] = "V1"
        conf.update({f"{prefix}.{k}": v for k, v in creds.items()})
    elif cat.type == "glue":
        conf[f"{prefix}.type"] = "glue"
    else:
        conf[f"{prefix}.type"] = cat.type
        conf[f"{prefix}.uri"] = cat.uri
    conf.update({f"{prefix}.{k}": v for k, v in cat.properties.items()})
    return conf


def load_catalog(cfg: Config, read_only: bool = False) -> Catalog:
    """The PyIceberg catalog named like the Spark one. Raises ServiceUnavailable (one line).
    ``read_only`` (the commands that only read: ``tables``, ``history``, ``plan``,
    ``doctor``, the dashboard): an embedded catalog that does not exist yet is an error,
    not created (a mistyped ``catalog.uri`` must not leave folders and an empty catalog)."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.catalog import load_catalog as _load

    try:
        _local_paths(cfg.catalog, create=not read_only)
        props = pyiceberg_properties(cfg.catalog)
        if cfg.catalog.type == "rest":  # every request bounded in time
            bounded: Catalog = rest_catalog_class()(cfg.catalog.name, **props)
            return bounded
        return _load(cfg.catalog.name, **props)
    except ServiceUnavailable:
        raise
    except Exception as e:  # library errors vary by backend; SQLAlchemy's span lines
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ServiceUnavailable(f"cannot open catalog {cfg.catalog.name!r}: {first}") from e


REST_TIMEOUT = (5.0, 20.0)
"""Seconds to connect to a REST catalog server and to wait for each reply. PyIceberg sets
none: a server retrying its own storage (S3 down: about two minutes per table) held every
command that long, per table. A healthy server answers in well under a second."""


@functools.cache
def rest_catalog_class() -> type:
    """PyIceberg's ``RestCatalog`` whose HTTP session bounds every request by
    :data:`REST_TIMEOUT` (a timeout is then one line: the catalog is unreachable)."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.catalog.rest import RestCatalog
    from requests.adapters import HTTPAdapter

    class BoundedAdapter(HTTPAdapter):
        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = REST_TIMEOUT
            return super().send(request, *args, **kwargs)

    class BoundedRestCatalog(RestCatalog):
        def _create_session(self) -> Any:
            session = super()._create_session()
            for prefix in ("http://", "https://"):  # a SigV4 adapter on the URI stays first
                session.mount(prefix, BoundedAdapter())
            return session

    return BoundedRestCatalog


def sqlite_path(cat: CatalogConfig) -> Path | None:
    """The database file of an embedded (SQLite) catalog; None for any other."""
    if cat.type == "sql" and cat.uri.startswith("sqlite:///"):
        return Path(cat.uri[len("sqlite:///") :])
    return None


def _local_paths(cat: CatalogConfig, create: bool) -> None:
    """Create the folders of an embedded lakehouse on first use (``create``; else a missing
    SQLite catalog is an error), but never replace a lost SQLite catalog with an empty one
    while its warehouse still holds data (every table would silently vanish)."""
    db = sqlite_path(cat)
    warehouse = (
        Path(cat.warehouse[len("file://") :]) if cat.warehouse.startswith("file://") else None
    )
    if db is not None and not db.exists() and warehouse is not None and warehouse.is_dir():
        if any(warehouse.iterdir()):
            raise ServiceUnavailable(
                f"catalog database {db} is missing but the warehouse {warehouse} holds data: "
                "restore the database (or point catalog.uri at it)"
            )
    if db is not None and not create and not db.is_file():
        raise ServiceUnavailable(
            f"cannot open catalog {cat.name!r}: its database {db} does not exist (check "
            "catalog.uri); a command that only reads creates nothing"
        )
    if not create:
        return
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    if warehouse is not None:
        warehouse.mkdir(parents=True, exist_ok=True)


def load_table(catalog: Catalog, ident: str) -> Table:
    """Load ``namespace.table``; a clear TableNotFound instead of a library traceback."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    parts = parse_table_identifier(ident)
    try:
        return catalog.load_table(parts)
    except (NoSuchTableError, NoSuchNamespaceError):
        raise TableNotFound(f"table {ident!r} not found in catalog {catalog.name!r}") from None
    except Exception as e:
        raise catalog_error(catalog.name, f"load table {ident!r}", e) from e


def catalog_error(name: str, what: str, e: Exception) -> Exception:
    """A catalog library's error as one line naming the catalog: its database or server
    unreachable is :class:`ServiceUnavailable`, any other failure (the table's metadata
    missing or unreadable, storage refusing) :class:`OperationFailed`."""
    if isinstance(e, IcefloeError):
        return e
    kind = type(e).__module__.split(".", 1)[0]
    unreachable = (  # the database refused or dropped the connection; requests' ConnectionError
        kind == "sqlalchemy" and type(e).__name__ in ("OperationalError", "InterfaceError")
    ) or (kind == "requests" and isinstance(e, OSError))
    if unreachable:
        return ServiceUnavailable(f"catalog {name!r} is unreachable ({describe(e)})")
    return OperationFailed(f"catalog {name!r} could not {what}: {describe(e)}")


def spark_table_name(cfg: Config, ident: str) -> str:
    """Fully qualified, quoted Spark name: lake.`ns`.`tbl` (identifiers are pre-validated)."""
    parts = parse_table_identifier(ident)
    return ".".join([cfg.catalog.name, *(f"`{p}`" for p in parts)])


def managed_tables(cfg: Config, catalog: Catalog) -> list[str]:
    """Explicit managed tables plus every table in the managed namespaces, sorted."""
    # pyiceberg: only when a catalog, table or file is used
    from pyiceberg.exceptions import NoSuchNamespaceError

    names: set[str] = set(cfg.managed.tables) | set(cfg.tables)
    for ns in cfg.managed.namespaces:
        try:
            for ident in catalog.list_tables(tuple(ns.split("."))):
                names.add(".".join(ident))
        except NoSuchNamespaceError:  # a missing namespace lists nothing
            pass
        except Exception as e:
            raise catalog_error(catalog.name, f"list namespace {ns!r}", e) from e
    if cfg.history.enabled and cfg.history.table not in names:
        try:  # icefloe's own history (once it exists): merged and expired like the rest
            if catalog.table_exists(cfg.history.table):
                names.add(cfg.history.table)
        except Exception as e:
            raise catalog_error(catalog.name, f"look up {cfg.history.table!r}", e) from e
    return sorted(names)

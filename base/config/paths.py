"""Where things are: the project root, the default config file, relative config paths.

Relative paths in ``catalog.uri`` (``sqlite:///relative``), ``catalog.warehouse``
(``file:relative``) and ``spark.executor_deps`` resolve against the project home: the
folder above ``conf/`` when the file lives in a ``conf/`` folder, else the file's own
folder (for an in-memory config, the ``home`` its caller names).
"""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = PROJECT_ROOT / "conf" / "icefloe.yaml"


def home_of(config_file: Path) -> Path:
    """The project home of a config file."""
    resolved = config_file.resolve()
    return resolved.parent.parent if resolved.parent.name == "conf" else resolved.parent


def resolve_uri(uri: str, home: Path) -> str:
    """``sqlite:///relative.db`` → ``sqlite:////home/relative.db``; other URIs unchanged."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return "sqlite:///" + str(home / uri[len("sqlite:///") :])
    return uri


def resolve_warehouse(warehouse: str, home: Path) -> str:
    """``file:relative`` → ``file:///home/relative``; other locations unchanged."""
    if warehouse.startswith("file:") and not warehouse.startswith("file:/"):
        return "file://" + str(home / warehouse[len("file:") :])
    return warehouse


def resolve_archive(path: str, home: Path) -> str:
    """``spark.executor_deps``: "" (none), a URI Spark fetches, or a local path."""
    if not path or "://" in path or Path(path).is_absolute():
        return path
    return str(home / path)

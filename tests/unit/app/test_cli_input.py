"""Bad numbers on the command line are one line and exit 2, before anything connects."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from icefloe.app.cli import cli, main

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "argv",
    [
        ["actor", "--idle-exit", "nan"],
        ["actor", "--idle-exit", "inf"],
        ["decide", "--poll", "nan"],
        ["decide", "--poll=-inf"],
        ["skew", "detect", "db.t", "--key", "k", "--min-share", "nan"],
    ],
)
def test_nan_and_infinity_are_rejected(argv: list[str]) -> None:
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    assert "is not a finite number" in result.output or "is not in the range" in result.output
    assert "Traceback" not in result.output


def test_a_busy_metrics_port_is_one_line() -> None:
    import socket

    from icefloe.base.errors import UsageError
    from icefloe.service.observe.metrics import DeciderMetrics, serve

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(UsageError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            serve(DeciderMetrics(), port)


@pytest.mark.parametrize(
    "argv",
    [
        ["tables"],
        ["tables", "--json"],
        ["history", "--json"],
        ["plan", "db.t"],
        ["request", "db.t"],
        ["notify", "db.t", "1"],
    ],
)
def test_read_only_commands_create_no_catalog(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """#45.7: a mistyped SQLite catalog path is one line and a non-zero exit; no folder and
    no empty catalog are left behind (the command would have said "no managed tables")."""
    import yaml

    from tests.support.config import config_raw

    raw = config_raw(tmp_path)
    raw["catalog"] = {
        "uri": f"sqlite:///{tmp_path}/typo/catalog.db",
        "warehouse": f"file://{tmp_path}/typo-warehouse",
    }
    conf = tmp_path / "icefloe.yaml"
    conf.write_text(yaml.safe_dump(raw))
    with pytest.raises(SystemExit) as exit:
        main(["--config", str(conf), *argv])
    out = capsys.readouterr()
    assert exit.value.code != 0, out
    assert f"its database {tmp_path}/typo/catalog.db does not exist" in out.err
    assert out.err.startswith("icefloe: error: cannot open catalog 'lake'")
    assert len(out.err.strip().splitlines()) == 1 and not out.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["icefloe.yaml"]


def test_doctor_reports_a_missing_catalog_without_creating_it(tmp_path: Path) -> None:
    """Not an error (a new lake has none until its first write), but said, path and all."""
    from icefloe.app.ops.doctor import check_catalog
    from tests.support.config import make_config

    cfg = make_config(tmp_path / "home")
    check = check_catalog(cfg)
    assert check.ok and f"sqlite:///{tmp_path}/home/catalog.db): not created yet" in check.detail
    assert not (tmp_path / "home").exists()

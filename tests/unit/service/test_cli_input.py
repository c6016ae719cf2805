"""Bad numbers on the command line are one line and exit 2, before anything connects."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from service.cli import cli

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

    from service.base.errors import UsageError
    from service.observe.metrics import DeciderMetrics, serve

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(UsageError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            serve(DeciderMetrics(), port)

"""The scan of the planned files fails in one line when the JVM cannot read the table's
manifests or files (S3 down during ``planFiles``: issue #28), never with py4j's Java stack
trace (which an actor would log as it is)."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.rewrite.tasks import ScanTasks
from service.base.errors import OperationFailed

pytestmark = pytest.mark.unit

JAVA_TRACE = (
    "An error occurred while calling o814.planFiles.\n"
    ": software.amazon.awssdk.core.exception.SdkClientException: Unable to execute HTTP "
    "request: Connect to http://127.0.0.1:9000 failed: Connection refused\n"
    "\tat software.amazon.awssdk.core.exception.SdkClientException$BuilderImpl.build(...)"
)


class _JavaError:
    def getClass(self) -> Any:  # noqa: N802
        return type("C", (), {"getName": lambda self: "software.amazon.SdkClientException"})()

    def getMessage(self) -> str:  # noqa: N802
        return "Unable to execute HTTP request: Connect to http://127.0.0.1:9000 failed\n\tat x"


class Py4JJavaError(Exception):
    def __init__(self) -> None:
        super().__init__(JAVA_TRACE)
        self.java_exception = _JavaError()


class _Unreachable:
    """A Java table and FileIO whose every read fails as S3 down makes them fail."""

    def newScan(self) -> Any:  # noqa: N802
        raise Py4JJavaError()

    def io(self) -> Any:
        return self

    def newInputFile(self, path: str) -> Any:  # noqa: N802
        raise Py4JJavaError()


def test_a_scan_that_cannot_read_the_manifests_is_one_line() -> None:
    tasks = ScanTasks(None, _Unreachable(), "lake.db.t", 1, no_deletes=True)
    with pytest.raises(OperationFailed) as failure:
        tasks.load(["s3://warehouse/db/t/data/a.parquet"])
    message = str(failure.value)
    assert "\n" not in message and "o814" not in message
    assert message == (
        "planning the scan of lake.db.t failed (software.amazon.SdkClientException: Unable to "
        "execute HTTP request: Connect to http://127.0.0.1:9000 failed); nothing written"
    )


def test_checking_that_planned_files_exist_is_one_line() -> None:
    tasks = ScanTasks(None, _Unreachable(), "lake.db.t", 1, no_deletes=True)
    with pytest.raises(OperationFailed) as failure:
        tasks.check_exist(["s3://warehouse/db/t/data/a.parquet"])
    assert "\n" not in str(failure.value) and "could not check" in str(failure.value)

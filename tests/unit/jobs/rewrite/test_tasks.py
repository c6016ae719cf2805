"""The scan of the planned files fails in one line when the JVM cannot read the table's
manifests or files (S3 down during ``planFiles``: issue #28), never with py4j's Java stack
trace (which an actor would log as it is)."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.base.errors import OperationFailed
from icefloe.jobs.rewrite.java_errors import may_be_missing
from icefloe.jobs.rewrite.tasks import ScanTasks

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


class _JavaNotFound(Exception):
    """A py4j-converted Java exception whose class is Iceberg's ``NotFoundException``."""

    class _J:
        def getClass(self) -> Any:  # noqa: N802
            name = "org.apache.iceberg.exceptions.NotFoundException"
            return type("C", (), {"getName": lambda s: name})()

    java_exception = _J()


def _raised_from(cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise RuntimeError("the Arrow job failed") from inner
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    ("error", "missing"),
    [
        (FileNotFoundError(2, "No such file or directory"), True),
        (_raised_from(FileNotFoundError("gone")), True),  # a cause down the chain
        (RuntimeError("Task failed: FileNotFoundError: [Errno 2] Failed to open file"), True),
        (RuntimeError("java.io.FileNotFoundException: File file:/t/a.parquet"), True),
        (RuntimeError("Location does not exist: s3://b/t/a.parquet"), True),
        (RuntimeError("S3 error: NoSuchKey"), True),
        (RuntimeError("Python worker exited: ModuleNotFoundError: No module named x"), False),
        (RuntimeError("verification failed: 3 rows written, 4 read"), False),
        (_JavaNotFound("x"), True),  # a py4j error's Java class
        (OperationFailed("could not reach S3"), False),
    ],
)
def test_only_a_failure_that_may_come_from_a_gone_file_is_looked_into(error, missing):
    """After a failed write the planned files are looked up (a request each on object
    storage) only when the failure may come from a file that is gone."""
    assert may_be_missing(error) is missing

"""errors.describe: any exception as one short line, secrets scrubbed (issue 28 items 9, 10)."""

from __future__ import annotations

import pytest

from icefloe.base.errors import OperationFailed, describe
from icefloe.base.redact import register_secrets

pytestmark = pytest.mark.unit


class _Java:
    """A stand-in for a py4j JavaObject throwable."""

    def __init__(self, name: str, message: str, cause: _Java | None = None) -> None:
        self.name, self.message, self.cause = name, message, cause

    def getClass(self) -> _Java:  # noqa: N802 (Java's names)
        return self

    def getSimpleName(self) -> str:  # noqa: N802
        return self.name

    def getMessage(self) -> str:  # noqa: N802
        return self.message

    def getCause(self) -> _Java | None:  # noqa: N802
        return self.cause


class Py4JJavaError(Exception):
    def __init__(self, java: _Java) -> None:
        super().__init__("An error occurred while calling o123.planFiles.\n: java...\n\tat x")
        self.java_exception = java


class OperationalError(Exception):  # SQLAlchemy's wrapper: the driver's error in ``orig``
    def __init__(self, orig: Exception) -> None:
        super().__init__(f"({type(orig).__name__}) {orig}\n[SQL: SELECT 1]\n(Background on...)")
        self.orig = orig


def test_a_java_error_is_its_class_message_and_root_cause() -> None:
    root = _Java("ConnectException", "Connection refused")
    error = Py4JJavaError(_Java("SdkClientException", "Unable to execute HTTP request\nmore", root))
    assert describe(error) == (
        "Py4JJavaError: SdkClientException: Unable to execute HTTP request "
        "(cause: ConnectException: Connection refused)"
    )


def test_a_multi_line_library_error_is_one_line_without_secrets() -> None:
    register_secrets(["pg-s3cr3t-xyz"])
    orig = ConnectionError("connection failed: password pg-s3cr3t-xyz rejected\nDETAIL: ...")
    text = describe(OperationalError(orig))
    assert text == "OperationalError: connection failed: password *** rejected"
    assert describe(OperationFailed("a\nb")) == "a b"
    assert len(describe(ValueError("x" * 1000))) <= 300

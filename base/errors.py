"""One error tree for icefloe. The CLI turns these into a one-line message and an exit code."""

from __future__ import annotations

from icefloe.base.redact import scrub


class IcefloeError(Exception):
    """Base of every error icefloe raises on purpose. ``exit_code`` is what the CLI returns."""

    exit_code = 1


class ConfigError(IcefloeError):
    """The configuration (file, environment override or argument) is invalid."""

    exit_code = 2


class UsageError(IcefloeError):
    """A command was called with bad arguments (e.g. a malformed table identifier)."""

    exit_code = 2


class TableNotFound(IcefloeError):
    """The named table does not exist in the configured catalog."""

    exit_code = 1


class OperationFailed(IcefloeError):
    """An operation ran and failed; nothing was committed."""

    exit_code = 1


class ServiceUnavailable(IcefloeError):
    """A backing service (catalog, Redis, Spark) cannot be reached."""

    exit_code = 1


MAX_DETAIL = 300


def describe(e: BaseException) -> str:
    """Any exception as one short line, secrets scrubbed: an icefloe error's own text; a
    library's (SQLAlchemy's multi-line messages, a Java exception through py4j, a REST or
    S3 error) as its type and the first line that says what failed."""
    if isinstance(e, IcefloeError):
        text = str(e)
    else:
        text = f"{type(e).__name__}: {_detail(e)}"
    text = " ".join(scrub(text).split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def _detail(e: BaseException) -> str:
    java = getattr(e, "java_exception", None)  # py4j's Py4JJavaError: the Java side's cause
    if java is not None:
        try:
            return _java_detail(java)
        except Exception:  # the JVM is gone: say what Python knows
            pass
    orig = getattr(e, "orig", None)  # SQLAlchemy's DBAPIError wraps the driver's error
    if isinstance(orig, BaseException) and str(orig).strip():
        e = orig
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def _java_detail(java: object) -> str:
    """``Top: message`` of a Java throwable, and its innermost cause when that differs."""

    def one(t: object) -> str:
        name = str(t.getClass().getSimpleName())  # type: ignore[attr-defined]
        message = str(t.getMessage() or "").strip().splitlines()  # type: ignore[attr-defined]
        return f"{name}: {message[0]}" if message else name

    top, root, depth = one(java), java, 0
    while root.getCause() is not None and depth < 20:  # type: ignore[attr-defined]
        root, depth = root.getCause(), depth + 1  # type: ignore[attr-defined]
    return top if root is java else f"{top} (cause: {one(root)})"

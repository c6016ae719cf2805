"""One-line descriptions of errors that come back through py4j (or from Python tasks), and
whether one may come from a file that is gone (:func:`may_be_missing`)."""

from __future__ import annotations


def java_class_name(error: BaseException) -> str:
    java = getattr(error, "java_exception", None)
    return str(java.getClass().getName()) if java is not None else type(error).__name__


def java_message(error: BaseException) -> str:
    java = getattr(error, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(error)
    return text.strip().splitlines()[0] if text.strip() else java_class_name(error)


def arrow_failure(error: BaseException) -> str:
    """Why the Arrow engine failed, in one line. A Python task's failure arrives wrapped in
    Spark's job-abort message; its traceback's last line is the cause (e.g. the executors'
    Python lacking PyIceberg), which is what the report should say."""
    java = getattr(error, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(error)
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line]
    if "PythonException" in text and starts:
        # after the traceback's indented frames, the first flush-left line is the exception
        cause = next(
            (
                line.strip()
                for line in lines[starts[-1] + 1 :]
                if line.strip() and not line[0].isspace()
            ),
            "",
        )
        if cause:
            hint = (
                (
                    " (on a cluster, ship the executors' Python packages: `icefloe pack`, "
                    "then spark.executor_deps)"
                )
                if cause.startswith(("ModuleNotFoundError", "ImportError"))
                else ""
            )
            return f"Python task failed on an executor: {cause}{hint}"
    return f"{java_class_name(error)}: {java_message(error)}"


_MISSING = ("filenotfound", "notfoundexception", "nosuchkey", "no such file", "does not exist")


def may_be_missing(error: BaseException) -> bool:
    """Could ``error`` (or an error it was raised from) come from reading a file that is
    gone? A Python ``FileNotFoundError``, Java's or Iceberg's not-found exceptions, S3's
    ``NoSuchKey``, or a Spark task's failure that names one of them."""
    seen: BaseException | None = error
    for _ in range(16):  # a chain of causes is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, FileNotFoundError):
            return True
        text = f"{java_class_name(seen)} {seen}".lower()
        if any(sign in text for sign in _MISSING):
            return True
        seen = seen.__cause__ or seen.__context__
    return False

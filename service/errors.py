"""One error tree for icefloe. The CLI turns these into a one-line message and an exit code."""

from __future__ import annotations


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

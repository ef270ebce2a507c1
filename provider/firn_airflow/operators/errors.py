"""Errors the maintenance operators raise on purpose; all derive from :class:`firn.errors.FirnError`.

Each is one clear task error: the message names the table, the connection or the Spark job and
what went wrong, and is raised without a chain of wrapped causes.
"""

from __future__ import annotations

from firn.errors import FirnError


class FirnTaskError(FirnError):
    """A maintenance task could not run as configured."""


class SparkConnectionError(FirnTaskError):
    """The Spark connection is missing or unusable, or ``spark-submit`` cannot be found."""


class SparkJobFailed(FirnTaskError):
    """The spark-submit job failed without reporting the table's own error (a killed job, a
    driver that could not start, a result file that is missing or malformed)."""


__all__ = ["FirnTaskError", "SparkConnectionError", "SparkJobFailed"]

"""How long each DAG task may run and whether it is retried: what Airflow's scheduler takes
from a DAG when it parses it.

Parsing reads no config (:mod:`icefloe.app.dags.support`), so these are fixed here: a timeout for
each CLI and planning task, and for each spark-submit task the ceiling of what the
``airflow:`` config section may give its runs (each run's own ``execution_timeout`` comes from
the config at run time, in the kwargs its planning task returns, and replaces the ceiling).
A DAG's ``dagrun_timeout`` is the sum, along its longest path, of each task's worst case:
every attempt timing out, every wait between attempts the longest. So it never cuts short a
run that its tasks' own limits allow, whatever the config says, and still ends one that
hangs where no task's timeout reaches. A mapped task counts once: its runs go side by side
(``icefloe_max_actors`` of them at most, within Airflow's ``max_active_tasks``).

A task is retried (:data:`RETRIES` times, after 1 to 2, then 2 to 4 minutes: exponential
backoff, at most :data:`MAX_RETRY_DELAY`) when a second attempt is safe and may succeed where
the first failed (Redis, Spark or the catalog away for a while); otherwise it has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from icefloe.base.config.airflow_settings import MAX_ACTOR_RUN_SECONDS, MAX_JOB_SECONDS

RETRIES = 2
RETRY_DELAY = timedelta(minutes=1)
BACKOFF = 2.0  # each wait about twice the one before (Airflow adds up to as much again)
MAX_RETRY_DELAY = timedelta(minutes=10)
SCHEDULING = timedelta(minutes=5)  # per task on a path: queued to running, and between tasks


@dataclass(frozen=True)
class Limits:
    """One task's ``execution_timeout`` and whether it is retried."""

    timeout: timedelta
    retried: bool

    @property
    def kwargs(self) -> dict[str, Any]:
        """The operator's (or ``@task``'s, or ``partial``'s) arguments."""
        if not self.retried:
            return {"execution_timeout": self.timeout, "retries": 0}
        return {
            "execution_timeout": self.timeout,
            "retries": RETRIES,
            "retry_delay": RETRY_DELAY,
            "retry_exponential_backoff": BACKOFF,
            "max_retry_delay": MAX_RETRY_DELAY,
        }

    @property
    def worst_case(self) -> timedelta:
        """Every attempt timed out, every wait between them the longest."""
        retries = RETRIES if self.retried else 0
        return self.timeout * (retries + 1) + MAX_RETRY_DELAY * retries


def dagrun_timeout(*path: Limits) -> timedelta:
    """A DAG's ``dagrun_timeout``: the worst cases of the tasks on its longest path, each with
    its :data:`SCHEDULING` time."""
    return sum((SCHEDULING + task.worst_case for task in path), timedelta())


# icefloe_optimize
DECIDE = Limits(timedelta(minutes=30), retried=True)  # `decide --once`: a pass is idempotent
PLAN_ACTORS = Limits(timedelta(minutes=10), retried=True)  # reads the backlog: Redis
# each run's own: `--max-seconds` plus the grace (config `airflow:`); a retry is safe, the
# queue makes actions idempotent (a killed run's action comes back when its lease expires)
ACTOR = Limits(timedelta(seconds=MAX_ACTOR_RUN_SECONDS), retried=True)
REPORT = Limits(timedelta(minutes=10), retried=True)  # `status --json` reads only

# the planning tasks of icefloe_skew and icefloe_adhoc validate a spec or a run's conf and
# read the config: what fails there fails the same way again
VALIDATE = Limits(timedelta(minutes=10), retried=False)
# `skew detect` reads the table and appends its report (readers take the newest); the ad-hoc
# `optimize` plans again from the table's current state, so an attempt after a commit finds
# that work done, and a failed or killed attempt's files are swept under its ad-hoc lease
# (icefloe.service.actor.adhoc); a dry run writes nothing. Each run's own: job_timeout_seconds.
JOB = Limits(timedelta(seconds=MAX_JOB_SECONDS), retried=True)
# the salted join writes its output with the spec's mode: `append` twice would add the rows
# twice, `create` again fails on the table the first attempt made
JOIN = Limits(timedelta(seconds=MAX_JOB_SECONDS), retried=False)

"""The ``airflow:`` section: how long the Airflow DAGs' spark-submit runs may take.

The DAGs' planning tasks read it at run time, like every other setting (parsing a DAG reads
no config: :mod:`icefloe.app.dags.support`). An ``icefloe_optimize`` actor run gets
``--max-seconds actor_max_seconds`` (it takes no new action after that, finishes the one in
flight and exits) and an ``execution_timeout`` of ``actor_max_seconds +
actor_grace_seconds``; every other spark-submit run (the ad-hoc ``optimize``, ``skew
detect``, the salted join) gets ``job_timeout_seconds``. The ceilings below bound every valid
config, so each DAG's ``dagrun_timeout``, fixed when Airflow parses it
(:mod:`icefloe.app.dags.limits`), covers whatever the file says.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict, model_validator
from pydantic.dataclasses import dataclass

from icefloe.base.config.fields import STRICT
from icefloe.base.config.messages import FieldProblem

MIN_RUN_SECONDS = 60
MAX_ACTOR_RUN_SECONDS = 2 * 3600  # actor_max_seconds + actor_grace_seconds, at most
MAX_JOB_SECONDS = 6 * 3600  # job_timeout_seconds, at most

ActorSeconds = Annotated[int, Strict(), Field(ge=MIN_RUN_SECONDS, le=MAX_ACTOR_RUN_SECONDS)]
JobSeconds = Annotated[int, Strict(), Field(ge=MIN_RUN_SECONDS, le=MAX_JOB_SECONDS)]


@dataclass(frozen=True, config=STRICT)
class AirflowSettings:
    """The DAGs' spark-submit runs (config section ``airflow:``), in whole seconds."""

    actor_max_seconds: ActorSeconds = Field(
        default=900,
        description="An actor run's --max-seconds: it takes new actions until then, finishes "
        "the one in flight and exits.",
    )
    actor_grace_seconds: ActorSeconds = Field(
        default=1800,
        description="Its execution_timeout is actor_max_seconds plus this (2 h at most): "
        "Spark's start and the action in flight.",
    )
    job_timeout_seconds: JobSeconds = Field(
        default=7200,
        description="Any other spark-submit run's timeout: the ad-hoc optimize, skew detect, "
        "the salted join.",
    )

    @model_validator(mode="after")
    def _actor_run_fits(self) -> AirflowSettings:
        if self.actor_timeout_seconds > MAX_ACTOR_RUN_SECONDS:
            raise FieldProblem(
                f"plus actor_grace_seconds ({self.actor_grace_seconds}) must be at most "
                f"{MAX_ACTOR_RUN_SECONDS} (the actor task's ceiling), got "
                f"{self.actor_max_seconds}",
                key="actor_max_seconds",
            )
        return self

    @property
    def actor_timeout_seconds(self) -> int:
        """An actor run's ``execution_timeout``: its ``--max-seconds`` and the grace after."""
        return self.actor_max_seconds + self.actor_grace_seconds

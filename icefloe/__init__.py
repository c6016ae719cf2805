"""icefloe keeps an Apache Iceberg warehouse healthy by itself.

Everything icefloe installs lives under this one import root. Each top-level folder of
the repository is one layer, mapped under it (``setup.py``: ``icefloe.jobs`` is
``jobs/``), and imports run down the layers only (``setup.cfg``'s import-linter
contract), top to bottom as :data:`LAYERS` lists them:

* ``app/``, ``icefloe.app``: the entry points, the ``icefloe`` CLI, the dashboard, the
  demo, the local dev servers, the Airflow DAGs' support and the spark-submit scripts;
* ``service/``, ``icefloe.service``: the loops, the decider, the actor and what observes;
* ``jobs/``, ``icefloe.jobs``: the Spark jobs: rewrites, skew, maintenance, history;
* ``state/``, ``icefloe.state``: the adapters, Redis and in-memory state behind Protocols;
* ``base/``, ``icefloe.base``: the foundation: config, catalog, keys, errors, Spark;
* ``optimizer/``, ``icefloe.optimizer``: the pure core, no Spark, Redis or Iceberg.

In a checkout ``icefloe/<layer>`` is a relative link to ``<layer>/``, so tools that read
files rather than run setuptools' editable finder (mypy, import-linter, editors) see the
same package an installed wheel holds. This module imports nothing: the executors'
archive (``icefloe pack``) ships it.
"""

LAYERS = ("app", "service", "jobs", "state", "base", "optimizer")

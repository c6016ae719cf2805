"""Run one DAG with ``dag.test()`` in a fresh process (Airflow reads its env at import).

Usage: python tests/dags/run_dag.py DAG_ID '{"run": "conf"}'. Prints ``dag-test state=...``.
"""

from __future__ import annotations

import json
import sys

from airflow.dag_processing.dagbag import DagBag


def main() -> int:
    dag_id, conf = sys.argv[1], json.loads(sys.argv[2])
    bag = DagBag()
    if bag.import_errors:
        print(f"dag-test import errors: {bag.import_errors}")
        return 1
    run = bag.dags[dag_id].test(run_conf=conf)
    state = getattr(run, "state", None)
    print(f"dag-test state={state}")
    return 0 if str(state) == "success" else 1


if __name__ == "__main__":
    sys.exit(main())

"""Layer 1 of 6, the entry points: the ``icefloe`` CLI, the dashboard, the demo, the local
dev servers, the Airflow DAGs' support and the spark-submit scripts. Nothing imports it."""

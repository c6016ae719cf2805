"""What the Airflow DAG files call (``airflow/dags/``): kept apart from the CLI so a DAG parse
stays light.
"""

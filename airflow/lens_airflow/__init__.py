"""What the DAGs in ``airflow/dags`` call: their schedule and retry policy (``schedule``), where
their settings come from (``settings``: Airflow Variables), and the task bodies (``tasks``: thin
calls into ``pipelines`` and ``tuning_report``).

An installed package (``pip install 'rebalance-lens[airflow]'``), not modules beside the DAG
files: an Airflow deployment copies or points at the DAG files alone, whatever its DAG bundle's
layout, and its workers need the project installed anyway to run the pipeline.
"""

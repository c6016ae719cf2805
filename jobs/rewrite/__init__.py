"""Rewriting an exact set of files in one atomic Iceberg commit.

Kept free of imports: the Arrow engine (``arrow_engine``) is imported on a cluster's
executors, which have ``jobs`` and ``optimizer`` but not ``service``.
"""

"""Skew handling for user jobs: detection, and salted joins and aggregations that equal
the plain ones, one module each:

    from icefloe.jobs.skew.hot_keys import detect_hot_keys, partition_skew
    from icefloe.jobs.skew.salting import salted_join
    from icefloe.jobs.skew.aggregate import salted_aggregate

:mod:`icefloe.jobs.skew.detect` stores a table's skew report; :mod:`icefloe.jobs.skew.join_job` runs
a salted join from the command line (``icefloe skew join``).
"""

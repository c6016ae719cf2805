"""Skew handling for user jobs: detection, and salted joins and aggregations that equal
the plain ones, one module each:

    from jobs.skew.hot_keys import detect_hot_keys, partition_skew
    from jobs.skew.salting import salted_join
    from jobs.skew.aggregate import salted_aggregate

:mod:`jobs.skew.detect` stores a table's skew report; :mod:`jobs.skew.join_job` runs a
salted join from the command line (``icefloe skew join``).
"""

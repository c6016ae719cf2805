"""Shared test helpers and the adapters' contract suites, imported by test modules.

``config`` holds the test config builders (``make_config``, ``config_raw``, ``part``, the
test Redis URL), ``cluster`` the local 3-master Redis cluster, ``clock`` and ``arrow`` small
helpers several tests share, and ``contracts`` one module per adapter contract suite (each
run by an in-memory subclass in ``tests/unit/state/`` and a Redis one in ``tests/redis/``).
Nothing here is a test module itself: pytest collects only ``test_*.py`` files.
"""

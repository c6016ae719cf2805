"""One module per adapter contract suite (queue, rolling stats, ledger, events, intents,
leader, shards, health): a ``...Contract`` class that a test module subclasses with a
``make`` for its implementation (in-memory in ``tests/unit/state/``, Redis in
``tests/redis/``, where each runs on a single Redis and on a Redis Cluster)."""

"""One module per adapter contract suite (queue, rolling stats, events, intents, leader,
shards): a ``...Contract`` class that a test module subclasses with a ``make`` for its
implementation (in-memory in ``tests/unit/service/``, Redis in ``tests/redis/``)."""

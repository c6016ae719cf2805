"""Layer 4 of 6, the adapters over Redis: each holds one kind of state behind a Protocol
(queue, rolling stats, ledger, events, leader, shards, intents, health), in one shape:
``<adapter>/__init__.py`` (the Protocol and its types), ``redis.py`` (with its Lua scripts beside
it) and ``memory.py`` (for unit tests). Nothing outside ``redis.py`` talks to Redis.
"""

"""Adapters over Redis: each holds one kind of state behind a Protocol (queue, rolling stats,
events, leader, shards, intents, health).
"""

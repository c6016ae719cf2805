"""Layer 5 of 6, the foundation: config, errors, redaction, the catalog, Spark and Redis
clients, keys and table stats. Stands on the pure ``icefloe.optimizer`` only.
"""

"""Foundation: config, errors, redaction, the catalog, Spark and Redis clients, keys and table
stats. Imports nothing above it.
"""

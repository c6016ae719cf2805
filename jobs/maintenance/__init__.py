"""Table maintenance: Iceberg's procedures, manifests, orphan files, when each is due, and the
shared-location guard.
"""

"""icefloe Spark jobs: actors (merge, sort, maintenance), skew detection and salted joins."""

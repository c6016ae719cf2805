"""Layer 3 of 6, the Spark jobs: actors (merge, sort, maintenance), skew detection and
salted joins. Below ``icefloe.service``; stands on ``icefloe.state`` and what is under it."""

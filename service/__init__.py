"""Layer 2 of 6, the loops: the decider, the actor, and what observes them (status, kept
state). Below ``icefloe.app``; stands on ``icefloe.jobs`` and what is under it."""

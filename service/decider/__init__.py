"""The decider: watches snapshots, keeps each partition's entropy, decides and queues actions
(the loop, its leader duties, the actor pool, maintenance needs).
"""

"""The actor: takes actions off the queue under a lease and runs them (the loop, the runners,
leases, and the ad-hoc run's lease).
"""

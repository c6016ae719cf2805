"""What an operator reads: ``status`` and the Prometheus metrics."""

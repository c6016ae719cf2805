"""icefloe service side: configuration, catalog access, the decider and the CLI."""

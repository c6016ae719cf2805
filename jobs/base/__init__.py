"""What every job shares: loading and planning a table, its report, and row verification."""

"""The durable action history: an Iceberg table of every action icefloe ran."""

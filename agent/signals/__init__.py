"""What assess makes of an observation (Signals), what it remembers between ticks, and how."""

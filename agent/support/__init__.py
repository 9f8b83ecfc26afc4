"""What every layer of the agent leans on: the data dir's files, its lock and pause switch,
notices for people, the daemon's telemetry and who leads."""

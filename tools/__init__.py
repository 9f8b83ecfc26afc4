"""What the agent can see and do: the world model, the actions, placement, backends, metrics."""

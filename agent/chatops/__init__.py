"""Chat-ops in Slack: ask, plan, approve and steer the agent from a channel (issue 15)."""

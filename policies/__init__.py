"""The guardrails: what the agent is allowed to do. Pure: no backend, no LLM."""

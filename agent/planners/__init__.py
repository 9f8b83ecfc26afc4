"""Planners turn an observation and its signals into a Plan. Rules by default, an LLM optionally."""

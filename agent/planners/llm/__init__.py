"""The LLM planner: a model that reads the situation, looks closer through read-only tools and
proposes a typed plan (planner.py), its endpoint (client.py, transfer.py, wire.py), what it is
told (prompts.py), its tools (tool_calls.py, lookups.py, audit_lookups.py) and the read-only
asker that answers people's questions from the record (asker.py)."""

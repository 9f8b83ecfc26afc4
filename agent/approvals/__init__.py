"""Decisions waiting for a human: the inbox, and who may answer through which channel."""

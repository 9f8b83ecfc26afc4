"""A GPU cluster twin: the simulator served as a real Kubernetes API (see server.py)."""

"""The Kubernetes backend: Steward's Cluster protocol over the official `kubernetes` client."""

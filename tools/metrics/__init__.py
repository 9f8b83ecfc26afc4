"""Metric sources: Prometheus and NVML readings, each with its freshness."""

"""Benchmarks: what the loop, the guard, placement, rotation and the LLM prompt cost."""

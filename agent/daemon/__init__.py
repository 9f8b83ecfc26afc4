"""The daemon: the composition root (config → backend, sources, notifiers), runtime, health."""

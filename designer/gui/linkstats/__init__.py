"""The Link statistics panel: per-link utilisation of the simulated workload."""

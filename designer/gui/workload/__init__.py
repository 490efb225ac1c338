"""The design's training jobs in the window: the Workloads dock, the live simulation of
every job at once, and the iteration timeline panel (`install_workload` puts them in)."""

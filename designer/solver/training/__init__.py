"""Training-step estimates on a design: gradient volume and compute (`step`), the
variation of synchronous steps under jitter (`jitter`) and the report that joins them to
a solved all-reduce (`workload`)."""

"""Training workloads on a design: jobs (model, training configuration, parallelism,
placement), the traffic of one iteration, and its simulation on the fabric with every
job's transfers sharing links at once.  No Qt.
"""

"""What a collective sends: algorithms as phases of rank-to-rank transfers (`phases`,
`collectives`), the rank orders they use, and the routed flows built from route
tables (`recipe`)."""

"""Array building blocks of the solver, numpy only: ragged rows, hashing, sorting, route
batches, rows looked up by key, and `SharedRoutes`, the flow-to-link incidence the flows
hand to the rates.  Nothing here knows what a design is."""

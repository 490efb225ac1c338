"""GPU-to-GPU routes over a snapshot: NVLink inside a domain, rail NICs and the fabric's
shortest, ECMP or adaptive paths between them.  `router.Router` owns every cache; the
other modules each build one kind of route table for it."""

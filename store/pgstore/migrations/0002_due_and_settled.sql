-- courier schema 2: indexes for the two scans that grow with history:
-- ClaimDue's search for due work and retention's for settled records.
CREATE INDEX deliveries_due ON deliveries (stream, next_at) WHERE state IN (1, 2, 3);
CREATE INDEX deliveries_settled ON deliveries (settled_at) WHERE settled_at <> 0;

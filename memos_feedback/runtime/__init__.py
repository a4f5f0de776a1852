"""What runs inside a host's agent loop: the subscriber (the hot path, the
enqueuer, the workers), the durable queue, the audit log and the outcome
wiring."""

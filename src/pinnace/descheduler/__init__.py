"""A descheduler as kubernetes-sigs/descheduler: evicts pods (through the eviction API, so
disruption budgets hold) that a DeschedulerPolicy's strategies find misplaced, so that the
scheduler places them better."""

"""The simulated mode: the cluster on the virtual clock, what a run records, and its report."""

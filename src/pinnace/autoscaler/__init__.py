"""kubernetes/autoscaler's cluster-autoscaler: node pools grown when pods cannot be scheduled
and shrunk when nodes are underused (`ClusterAutoscaler`, docs/autoscaling.md)."""

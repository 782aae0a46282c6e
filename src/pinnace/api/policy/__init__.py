"""The policy/v1 API group: PodDisruptionBudgets."""

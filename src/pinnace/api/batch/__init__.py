"""The batch/v1 API group: Jobs."""

"""The autoscaling API group: HorizontalPodAutoscalers (autoscaling/v2)."""

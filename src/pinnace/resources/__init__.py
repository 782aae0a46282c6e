"""Resource quantities and the arithmetic of requests, limits and allocatable.

The bottom layer: it depends on nothing else in Pinnace. `quantity` is Kubernetes'
resource.Quantity, exact to the digit.
"""

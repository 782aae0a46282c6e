"""kube-controller-manager's controllers: each keeps part of the cluster as its objects say."""

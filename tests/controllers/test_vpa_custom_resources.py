"""A Vertical Pod Autoscaler whose target is a custom resource with the scale subresource, on
the virtual clock: an operator's WebApp owns the Deployment it made, and the pods under it
are the VPA's, as upstream's controller fetcher finds the top-most well-known or scalable
controller; the recommender samples them and admission gives new ones the target."""

from __future__ import annotations

from tests.controllers.test_hpa_custom_resources import webapp_crd
from tests.controllers.test_vpa import DEPLOYMENTS, VPAS, Cluster, app

from pinnace.api import catalog
from pinnace.controllers.vpa import VPAOptions

CRDS = catalog.kind("apiextensions.k8s.io", "customresourcedefinitions")
RECOMMENDING = VPAOptions(recommender_interval=60.0, updater_interval=10.0**9)


def test_a_vpa_on_a_scalable_custom_resource_controls_the_pods_under_it() -> None:
    cluster = Cluster(RECOMMENDING)
    try:
        cluster.run(cluster.client.create(CRDS, "", webapp_crd()))
        cluster.wait(1)
        kind = cluster.server.kinds.by_resource("example.com", "webapps")
        assert kind is not None
        body = {"metadata": {"name": "web"}, "spec": {"replicas": 1}}
        webapp = cluster.run(cluster.client.create(kind, "default", body))
        target = {"apiVersion": "example.com/v1", "kind": "WebApp", "name": "web"}
        vpa = {"metadata": {"name": "web"}, "spec": {"targetRef": target}}
        cluster.run(cluster.client.create(VPAS, "default", vpa))
        cluster.deploy(annotations={"sim.pinnace.dev/cpu.app": "400m"})
        deployment = cluster.run(cluster.client.get(DEPLOYMENTS, "default", "web"))
        deployment["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "example.com/v1",
                "kind": "WebApp",
                "name": "web",
                "uid": webapp["metadata"]["uid"],
                "controller": True,
            }
        ]
        cluster.run(cluster.client.update(DEPLOYMENTS, deployment))

        cluster.wait(300)
        status = cluster.vpa()["status"]
        [entry, _] = status["recommendation"]["containerRecommendations"]
        assert entry["containerName"] == "app"
        recommended = entry["target"]
        cluster.restart()
        [pod] = cluster.pods()
        assert app(pod)["resources"]["requests"] == recommended
    finally:
        cluster.close()

"""Runbook step 3, live: Events about Node Pools, the workload and its Pods, filtered by the server."""

from sunkcheck.collect.kube import EVENTS, Kube


def for_nodepools(kube: Kube) -> list[dict]:
    # Events about cluster-scoped objects live in whatever namespace the controller chose: ask everywhere.
    return kube.list(EVENTS, field_selector="involvedObject.kind=NodePool")


def for_workload(kube: Kube, kind: str, namespace: str | None) -> list[dict]:
    """Events about NodeSets/DaemonSets of `kind`, and Warning Events about Pods (FailedScheduling...)."""
    return (kube.list(EVENTS, namespace, field_selector=f"involvedObject.kind={kind}")
            + kube.list(EVENTS, namespace, field_selector="involvedObject.kind=Pod,type=Warning"))

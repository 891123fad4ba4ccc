"""Runbook step 5, live: the workload's own Pods, and the Pods on Nodes where the resource check matters."""

from sunkcheck.collect.kube import PODS, Kube

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"  # what the scheduler counts on a Node


def by_label(kube: Kube, namespace: str | None, selector: str) -> list[dict]:
    return kube.list(PODS, namespace, label_selector=selector)


def on_node(kube: Kube, node: str) -> list[dict]:
    return kube.list(PODS, field_selector=f"spec.nodeName={node},{NON_TERMINAL}")

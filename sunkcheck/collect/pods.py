"""Runbook step 5, live: the workload's own Pods, and the Pods on Nodes where the resource check matters."""

from sunkcheck.collect.kube import PODS, Kube

NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"  # what the scheduler counts on a Node


def by_label(kube: Kube, namespace: str | None, selector: str) -> list[dict]:
    return kube.list(PODS, namespace, label_selector=selector)


def on_node(kube: Kube, node: str) -> list[dict]:
    return kube.list(PODS, field_selector=f"spec.nodeName={node},{NON_TERMINAL}")


def everywhere(kube: Kube) -> list[dict]:
    """Every non-terminal Pod in the cluster, slimmed to what the feasibility engine reads: for `explain`,
    whose per-Node reasons must count every Pod that holds a Node's resources."""
    return [slim(p) for p in kube.list(PODS, field_selector=NON_TERMINAL)]


def slim(pod: dict) -> dict:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    keep_spec = ("nodeName", "containers", "initContainers", "overhead", "resources", "affinity")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {k: meta[k] for k in ("name", "namespace", "labels", "ownerReferences", "uid") if k in meta},
            "spec": {k: spec[k] for k in keep_spec if k in spec},
            "status": {k: v for k, v in (pod.get("status") or {}).items() if k in ("phase", "conditions")}}

"""Runbook step 4, live: the NodeSet(s) to check."""

from sunkcheck.collect.kube import NODESETS, CallError, Kube


def fetch(kube: Kube, namespace: str | None, name: str | None) -> list[dict]:
    if name is None:
        return kube.list(NODESETS, namespace)
    if namespace is None:
        return kube.list(NODESETS, field_selector=f"metadata.name={name}")
    found = kube.read(NODESETS, name, namespace)
    if found is None:
        raise CallError(NODESETS.path(namespace, name), 404, f"NodeSet {name} not found in namespace {namespace}")
    return [found]

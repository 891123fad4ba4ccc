"""Runbook step 4, live: the NodeSet(s) to check."""

from sunkcheck.collect.kube import NODESETS, Kube


def fetch(kube: Kube, namespace: str | None, name: str | None) -> list[dict]:
    return kube.list(NODESETS, namespace) if name is None else kube.named(NODESETS, name, namespace)

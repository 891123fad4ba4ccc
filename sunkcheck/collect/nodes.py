"""Runbook step 2, live: every Node (a NodeSet evaluates every Node of the cluster)."""

from sunkcheck.collect.kube import NODES, Kube


def fetch(kube: Kube) -> list[dict]:
    return kube.list(NODES)

"""Runbook step 1, live: the Node Pools (cluster-scoped; all of them, pool-split compares pools)."""

from sunkcheck.collect.kube import NODEPOOLS, Kube


def fetch(kube: Kube) -> list[dict]:
    return kube.list(NODEPOOLS)

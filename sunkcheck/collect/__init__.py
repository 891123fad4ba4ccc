"""LIVE ONLY: read the cluster through the Kubernetes API (GET/LIST only) into a Snapshot."""

"""Before deploying: SUNK Helm values and Node Pool manifests, read with line numbers and composed into
the NodeSets SUNK would create."""

"""Pure analysis: facts from a snapshot, one module per runbook step, plus per-Node feasibility."""

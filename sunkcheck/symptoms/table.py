"""Every row sunkcheck knows, NodeSet rows first: the registry behind `sunkcheck rules` and `--ignore`."""

from sunkcheck.symptoms import daemonset, lint, nodeset

RULES = nodeset.RULES + daemonset.RULES
LINT_RULES = lint.RULES

"""Every row sunkcheck knows, NodeSet rows first: the registry behind `sunkcheck rules` and `--ignore`."""

from sunkcheck.symptoms import daemonset, nodeset

RULES = nodeset.RULES + daemonset.RULES

"""sunkcheck: is this SUNK NodeSet bound to the right CKS Node Pool, and if not, why?"""

__version__ = "0.1.0"

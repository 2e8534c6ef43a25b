"""Benchmarks of the ivm engine on the peers' workloads W1/W2/W3: ``python -m bench``."""

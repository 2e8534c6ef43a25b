"""Dataflow operators, one module per family."""

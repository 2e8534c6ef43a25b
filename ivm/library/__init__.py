"""Dataflows built from the engine's primitives: graph algorithms of the papers."""

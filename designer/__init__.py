"""Fabric Designer: sketch AI GPU clusters and see how the network behaves."""

__version__ = "0.1.0"

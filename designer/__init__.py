"""Fabric Designer: sketch AI GPU clusters and see how the network behaves.

Importing the package changes no process-wide setting; the entry points tune the
allocator and numpy for solving (`designer.memory.tune_process`).
"""

__version__ = "0.1.0"

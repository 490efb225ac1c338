"""Fabric Designer: sketch AI GPU clusters and see how the network behaves."""

from designer.memory import keep_freed_memory, no_huge_pages, one_malloc_arena

__version__ = "0.1.0"

no_huge_pages()  # before the solver allocates anything (see designer.memory)
one_malloc_arena()  # before the solver's helper thread first allocates
keep_freed_memory()  # a solve reuses what the last one freed (see designer.memory)

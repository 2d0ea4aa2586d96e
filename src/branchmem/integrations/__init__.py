"""Adapters that put branchmem under other frameworks' memory interfaces.

``import branchmem`` never imports them: each submodule needs its framework, installed with
the matching extra (e.g. ``pip install branchmem[langgraph]``).
"""

"""Retrieval over what a view shows: lexical and vector ranking, token counting, context.

Search never sees a record the view hides: callers pass it the visible revisions, so ranking
cannot leak an abandoned branch however the index is built.

The embedders are exported here so ``Memory.open(..., embedder=HashingEmbedder())`` needs one
short import: ``from branchmem.search import HashingEmbedder``.
"""

from .embedding import Embedder, EmbedderUnavailable, HashingEmbedder, MiniLMEmbedder

__all__ = ["Embedder", "EmbedderUnavailable", "HashingEmbedder", "MiniLMEmbedder"]

"""The token counter every system is cut with: branchmem's documented default.

Exact tokenizer parity does not matter here; what matters is that one Chinese character
is not counted as a quarter token (which would let Chinese contexts run four times over
the budget an English one gets). See ``branchmem.search.tokens``.
"""

from branchmem.search.tokens import count_tokens

__all__ = ["count_tokens"]

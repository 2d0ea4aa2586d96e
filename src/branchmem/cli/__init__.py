"""``branchmem``: the command line, one command per method of the Python API.

Every data command works on a store directly (``--db URL``) or through the service
(``--url URL --api-key KEY``; or ``BRANCHMEM_DB``, ``BRANCHMEM_URL``, ``BRANCHMEM_API_KEY``):

    branchmem add-event u1 --content "I'm moving to Chengdu" --db mem.db
    branchmem add-record f1 -s u1 --content "moving to Chengdu" --key city --db mem.db
    branchmem visible u1 --db mem.db
    branchmem tree u1 --db mem.db
    branchmem serve --db postgresql://... --port 8765

Commands for API methods are built from the operation table (``api_commands.py``); the
others (import, tree, serve, keys ...) are in ``commands.py``. ``--json`` prints what the API
returned in the wire format.
"""

from .main import app, main

__all__ = ["app", "main"]

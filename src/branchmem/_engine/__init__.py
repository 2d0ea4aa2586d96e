"""The work behind ``Memory``: one module per part of the problem.

``Memory`` (``branchmem.memory``) checks arguments, opens the transaction and hands each
function here a ``Namespace``; these modules compose the store's primitives (``store.base``)
with the core rules (topology, provenance, resolution, visibility, retraction, search).
They import no concrete backend, service, CLI, client, integration or importer. See
docs/architecture.md for the map.
"""

"""Two tenants asking at once for keys bound to the same namespace (the service's KeyRing)."""

from __future__ import annotations

import threading

from branchmem import ConflictError, Memory


def race_for_one_binding(memories: list[Memory]) -> list[str]:
    """Each memory (a separate connection or pool, as separate processes would hold) creates
    a key for its own tenant bound to ``race/*`` at the same moment; sorted outcomes."""
    from branchmem.server.keys import KeyRing

    barrier = threading.Barrier(len(memories))
    outcome: list[str] = []

    def create(memory: Memory, tenant: str) -> None:
        barrier.wait()
        try:
            KeyRing(memory).create(tenant, ["race/*"])
            outcome.append("granted")
        except ConflictError:
            outcome.append("refused")

    threads = [
        threading.Thread(target=create, args=(m, f"tenant-{i}")) for i, m in enumerate(memories)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for memory in memories:
        memory.close()
    return sorted(outcome)

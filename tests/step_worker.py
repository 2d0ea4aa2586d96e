"""A process that runs ``Memory`` calls on a SQLite file for ``test_readers_across_processes``:
one JSON line ``{"op", "kwargs", "namespace"}`` in, one JSON line out (``{"value"}`` encoded as
the API's codec does, or ``{"error", "message"}``), until stdin ends."""

from __future__ import annotations

import json
import sys
from typing import Any

from branchmem import Memory
from branchmem.api.codec import encode


def main(path: str) -> None:
    with Memory.open(path) as memory:
        for line in sys.stdin:
            step = json.loads(line)
            try:
                answer: dict[str, Any] = {
                    "value": encode(
                        getattr(memory, step["op"])(**step["kwargs"], namespace=step["namespace"])
                    )
                }
            except Exception as error:  # every error is an outcome to compare
                answer = {"error": type(error).__name__, "message": str(error)}
            print(json.dumps(answer, default=str), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

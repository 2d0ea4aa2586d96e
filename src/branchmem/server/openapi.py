"""The OpenAPI document of the service, as committed in ``docs/openapi.json``.

    python -m branchmem.server.openapi docs/openapi.json

A test compares the committed file with ``document()``, so the file cannot drift from the app.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def document() -> dict[str, Any]:
    from ..memory import Memory
    from .app import create_app

    with Memory() as memory:
        return create_app(memory, auth=True).openapi()


def render() -> str:
    return json.dumps(document(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

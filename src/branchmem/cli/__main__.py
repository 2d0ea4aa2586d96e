"""``python -m branchmem.cli``: the same as the ``branchmem`` command."""

from .main import main

raise SystemExit(main())

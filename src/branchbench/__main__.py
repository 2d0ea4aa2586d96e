"""`python -m branchbench` runs the CLI."""

from branchbench.cli import main

raise SystemExit(main())

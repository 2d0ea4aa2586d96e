"""branchbench: how much each kind of memory leaks an abandoned conversation branch.

Scenarios are branching dialogues whose events arrive in order, abandoned branches
included; every system ingests them all and then builds the context for a probe at an
anchor under one token budget. Scoring is keyword-only so every figure can be recomputed
from saved contexts and answers.
"""

from branchbench.errors import BenchError, ManifestError, ScenarioError
from branchbench.scenario import Fact, Message, Probe, Scenario, load_split

__all__ = [
    "BenchError",
    "Fact",
    "ManifestError",
    "Message",
    "Probe",
    "Scenario",
    "ScenarioError",
    "load_split",
]

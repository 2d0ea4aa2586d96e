"""One exception tree for the benchmark; the CLI turns these into messages at the edge."""


class BenchError(Exception):
    """Base class of every branchbench error."""


class ScenarioError(BenchError):
    """A scenario file is malformed or fails a validator check; the message names it."""

    def __init__(self, scenario: str, message: str) -> None:
        super().__init__(f"{scenario}: {message}")
        self.scenario = scenario
        self.detail = message


class ManifestError(BenchError):
    """The frozen split does not match its manifest; the message names the file."""


class ResultsError(BenchError):
    """A results directory was changed after its run; the message names the file."""


class LLMError(BenchError):
    """The model endpoint failed or answered with something unusable."""

"""schemathesis against the OpenAPI document: no input makes the service fail.

Every operation gets generated requests (valid and invalid per the schema); each response
must not be a 5xx, must have a documented status and media type, and must match its schema
(problem documents included), and a method the path does not have gets 405 with ``Allow``.
``BRANCHMEM_FUZZ_EXAMPLES`` sets the generated cases per operation (5 by default; with
schemathesis' coverage phase of boundary and edge values, about 2,000 requests in all).
"""

from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the test extra")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from branchmem import Memory  # noqa: E402
from branchmem.server import KeyRing, Limits, create_app  # noqa: E402

EXAMPLES = int(os.environ.get("BRANCHMEM_FUZZ_EXAMPLES", "5"))

memory = Memory()
API_KEY, _ = KeyRing(memory).create("fuzz", ["*"])
for namespace in ("default", "a", "0"):  # a little data where generated names often land
    memory.add_event("0", content="root", namespace=namespace)
    memory.add_event("1", "0", content="child", namespace=namespace)
    memory.add_record("r", sources=["1"], content="fact", key="k", namespace=namespace)
# A batch past the schema's maxItems (10,000) is over the default 1 MiB body limit as well, and
# the guard answers 413 before the schema can answer 422; schemathesis counts only the latter
# as rejecting schema-violating data. The body limit has its own tests (tests/test_guard.py).
app = create_app(memory, limits=Limits(max_body=64 << 20))
schema = schemathesis.openapi.from_asgi("/openapi.json", app)  # equal to the committed file


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_request_makes_the_service_fail(case: schemathesis.Case) -> None:
    # schema-valid is not always acceptable here (an unknown id, a NUL, a foreign cursor):
    # those must be 4xx problems, which the remaining checks hold them to
    case.call_and_validate(
        headers={"Authorization": f"Bearer {API_KEY}"}, excluded_checks=[positive_data_acceptance]
    )

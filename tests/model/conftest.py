"""One exploration of the default worlds per test session.

Exhausting the eight default worlds is the expensive part of the model's
tests; every test that needs the reference's verdict, its state counts, the
rules it takes or the step texts it produces reads this one run (with the
liveness check on, so I-13 is judged in the same pass).
"""

from __future__ import annotations

import pytest
from lernie_spec.check import jobs_default
from lernie_spec.coverage import Coverage, measure
from lernie_spec.variants import DEFAULT


@pytest.fixture(scope="session")
def reference_run() -> Coverage:
    return measure(DEFAULT, liveness=True, jobs=jobs_default())

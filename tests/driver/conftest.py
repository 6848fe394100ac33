"""No process a test here starts outlives it, even when the test fails."""

from tests.support.reapers import reap_own_processes  # noqa: F401

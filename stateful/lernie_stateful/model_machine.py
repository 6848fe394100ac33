"""A Hypothesis machine over the model alone, for scopes too big to exhaust.

Each rule application takes one enabled step of the model (Hypothesis picks
which), and after every step the safety invariants of SPEC.md §16 are checked
on the step and on the state reached. The `WIDE` scope (a root with two
children, more inputs, more processes) is far beyond what the explorer
exhausts; random walks through it complement the exhaustive small scopes.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from lernie_spec.model import NOBODY, Profile, Scope, State, Step, initial, successors
from lernie_spec.properties import quiescent, state_violations, step_violations

WIDE = Scope(
    parents=(NOBODY, 0, 0),
    initial=(True, False, False),
    messages=3,
    advances=1,
    stops=1,
    scans=1,
    crashes=1,
    tools=2,
    sends=3,
    exhaust=1,
    max_procs=4,
)


class ProtocolViolation(AssertionError):
    """A step or a state of the model broke a §16 invariant."""


def check(pre: State, step: Step, post: State, scope: Scope) -> None:
    """Raise ProtocolViolation if the step or the state it reaches is bad."""
    bad = step_violations(pre, step, post, scope) + state_violations(post, scope)
    if bad:
        raise ProtocolViolation(f"{', '.join(sorted(set(bad)))} after {step.rule}: {step.text}")


class ModelMachine(RuleBasedStateMachine):
    """Random walks through the model under `profile` in `scope`."""

    profile = Profile()
    scope = WIDE

    def __init__(self) -> None:
        super().__init__()
        self.state = initial(self.scope)
        self.steps = 0

    @rule(data=st.data())
    def take_a_step(self, data: st.DataObject) -> None:
        succ = successors(self.state, self.profile, self.scope)
        if not succ:
            # Every input used up and nothing enabled: that must be quiescence,
            # never a process stuck with no step.
            assert quiescent(self.state), "a process is stuck with no enabled step"
            return
        step, nxt = data.draw(st.sampled_from(succ), label="step")
        check(self.state, step, nxt, self.scope)
        self.state = nxt
        self.steps += 1

    @invariant()
    def budgets_never_negative(self) -> None:
        assert min(self.state.budget) >= 0

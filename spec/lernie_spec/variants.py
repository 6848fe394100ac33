"""Profiles (protocol versions) and variants (one historic bug each), and scopes.

Every entry names the invariants it is expected to violate; `reference` must
violate none. Upstream bug ids lead the names where upstream had one.
"""

from __future__ import annotations

from typing import NamedTuple

from lernie_spec.model import NOBODY, Profile, Scope


class Variant(NamedTuple):
    name: str
    profile: Profile
    expected: frozenset[str]
    summary: str


def _v(name: str, expected: tuple[str, ...], summary: str, **flags: bool) -> Variant:
    return Variant(name, Profile(**flags), frozenset(expected), summary)


VARIANTS: tuple[Variant, ...] = (
    _v("reference", (), "this project's SPEC.md"),
    _v("litany-0.0.12", ("I-5",),
       "upstream as shipped: rename-replace deposits (D-1)", create_only=False),
    _v("lernie-0.0.11", ("I-5", "I-12", "I-13", "I-22"),
       "upstream as shipped: rename-replace deposits, no reply debt, no stop cascade",
       create_only=False, reply_debt=False, stop_cascade=False),
    _v("bl-9c8f-no-release-rule", ("I-7",),
       "a release does not re-read the inbox", release_rule=False),
    _v("bl-7318-release-by-close", ("I-7",),
       "release by close: a forked child keeps the lock", release_by_close=True),
    _v("bl-82d8-no-reply-debt", ("I-12", "I-13"),
       "every final response replies to the last prompter", reply_debt=False),
    _v("bl-a96a-reply-to-parent", ("I-11",),
       "a final response goes to the parent", reply_to_parent=True),
    _v("bl-4a6c-no-recipient-revival", ("I-7",),
       "the exit protocol does not probe the recipient", revival=False),
    _v("bl-5846-no-exit-self-launch", ("I-7",),
       "no exit self-launch (and, as then, no release rule)",
       exit_self_launch=False, release_rule=False),
    _v("bl-b98d-stop-leaves-tool-window", ("I-7",),
       "a stop exits with its tool window open (and, as then, no crash settlement)",
       stop_settles_window=False, crash_settlement=False),
    _v("overwriting-deposit", ("I-5",),
       "publication by rename replaces a same-named deposit", create_only=False),
    _v("no-stray-recovery", ("I-18",),
       "the drain does not commit a crashed delivery first", stray_recovery=False),
    _v("stopped-obituary-wakes-parent", ("I-9",),
       "a stopped exit probes its parent", stopped_wakes_parent=True),
    _v("no-scan-revival", ("I-20",),
       "the scan reports a dead agent but relaunches nothing (upstream, D-24)",
       scan_revival=False),
)

# ---------------------------------------------------------------------------------------
# Profiles measured on a real binary (docs/upstream.md, "Prediction against reality"): what
# the conformance kit found the shipped program doing that its profile above did not
# predict. Each row is the profile plus the measured difference, with its own trace.
MEASURED: tuple[Variant, ...] = (
    _v("lernie-0.0.11-measured", ("I-5", "I-12", "I-13", "I-20"),
       "lernie 0.0.11 as the kit measured it: the profile, and its scan revives nobody (D-24)",
       create_only=False, reply_debt=False, stop_cascade=False, scan_revival=False),
)
VARIANTS += MEASURED

BY_NAME = {v.name: v for v in VARIANTS}


class NamedScope(NamedTuple):
    name: str
    scope: Scope
    summary: str
    size: int = 0  # the reference's states in this world: `--jobs` starts the largest first


def largest_first(worlds: tuple[NamedScope, ...]) -> list[NamedScope]:
    """The order in which a pool of workers is given the worlds: by `size`, largest
    first (ties in scope order), so no large world starts last and runs alone."""
    return sorted(worlds, key=lambda ns: -ns.size)


_TREE = (NOBODY, 0)  # P (root, exists) and C (its child, made by dispatch)

# The default scope is the union of small worlds, each exhausted in turn
# (cheapest first, so a variant or a mutant is usually caught early): together
# they take every rule the model implements and every addressing case
# (`lernie-check --coverage`).
DEFAULT: tuple[NamedScope, ...] = (
    NamedScope("races", Scope(_TREE, (True, False), messages=2, advances=1, stops=0,
                              scans=0, crashes=1, tools=0, sends=0, exhaust=0, max_procs=3),
               "root P: two operator messages, one hand-run advance, one crash, 3 processes",
               size=4349),
    NamedScope("faults", Scope(_TREE, (True, True), messages=1, advances=0, stops=1,
                               scans=1, crashes=1, tools=1, sends=0, exhaust=1, max_procs=2,
                               split_mark=True),
               "P and C exist: one message, a tool step, a stop, a scan, a crash, a budget; "
               "a result and its returned mark in two steps",
               size=7703),
    NamedScope("stop-tree", Scope((NOBODY, 0, 1), (True, True, True), messages=1, advances=0,
                                  stops=1, scans=0, crashes=0, tools=1, sends=0, exhaust=0,
                                  max_procs=2, message_to=(2,)),
               "P, C and grandchild G exist: the operator messages G; a tool step, a stop "
               "(of any of the three)",
               size=41),
    NamedScope("crash-loop", Scope((NOBODY,), (True,), messages=1, advances=0, stops=0,
                                   scans=4, crashes=3, tools=1, sends=0, exhaust=0,
                                   max_procs=2, errors=1),
               "root P alone: one message, a tool step, four scans, three crashes and a "
               "failing model call (the crash-loop guard fires and resets)",
               size=14097),
    NamedScope("two-scans", Scope(_TREE, (True, True), messages=1, advances=0, stops=0,
                                  scans=2, crashes=2, tools=1, sends=0, exhaust=0, max_procs=2),
               "P and C exist: one message, a tool step, two crashes, two scans",
               size=17013),
    NamedScope("exchange", Scope(_TREE, (True, False), messages=1, advances=0, stops=0,
                                 scans=0, crashes=0, tools=0, sends=2, exhaust=0, max_procs=2),
               "P and its child C: one operator message, two model sends (dispatch, message)",
               size=11181),
    NamedScope("dispatch", Scope(_TREE, (True, False), messages=1, advances=0, stops=1,
                                 scans=1, crashes=1, tools=0, sends=1, exhaust=1, max_procs=2),
               "P dispatches C: a stop, a scan, a crash and a budget exhaustion race the child",
               size=80273),
    NamedScope("lineage", Scope((NOBODY, 0, 1), (True, True, True), messages=1, advances=0,
                                stops=0, scans=0, crashes=0, tools=0, sends=1, exhaust=0,
                                max_procs=2),
               "P, its child C and grandchild G exist: one message, one model send",
               size=4611),
    NamedScope("tools-and-sends", Scope(_TREE, (True, False), messages=1, advances=0, stops=0,
                                        scans=0, crashes=0, tools=1, sends=2, exhaust=0,
                                        max_procs=2, errors=1),
               "P and its child C: one message, a tool step, two sends, a failing model call",
               size=52557),
    NamedScope("siblings", Scope((NOBODY, 0, 0), (True, True, True), messages=1, advances=0,
                                 stops=0, scans=1, crashes=1, tools=0, sends=1, exhaust=0,
                                 max_procs=2, message_to=(1,), split_mark=True),
               "P with children C and S: the operator messages C; a send, a scan, a crash; "
               "a result and its returned mark in two steps",
               size=47057),
)

# Worlds beyond the default, for `lernie-check --scope NAME`.
EXTRA: tuple[NamedScope, ...] = (
    NamedScope("siblings-exchange", Scope((NOBODY, 0, 0), (True, True, True), messages=1,
                                          advances=0, stops=0, scans=0, crashes=0, tools=0,
                                          sends=2, exhaust=0, max_procs=2),
               "P with two children C and S, all existing: one message, two model sends"),
)
SCOPES = {ns.name: ns for ns in DEFAULT + EXTRA}

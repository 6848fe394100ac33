"""lernie_ref: the reference implementation of the lernie agent-inbox protocol.

The normative rules live in ``spec/SPEC.md``; every module cites the rule ids
it implements. Importing this package is cheap on purpose: ``lernie message``
runs through it on every deposit.
"""

__version__ = "0.1.0"

"""The one helper package of the test suite: every test folder imports its helpers from here.

Modules by job:

- :mod:`.runners`: the real ``lernie`` and ``lernie-check`` commands as processes (text or
  bytes), the one-line refusal check, and the recording-launcher entry script
  (``recording_cli.py``).
- :mod:`.processes`: processes read with the checkers' ``/proc`` reader
  (:mod:`lernie_stateful.procfs`): those naming a path, a workspace's drivers; a real
  lock-holding process; reaping a process a test started.
- :mod:`.waits`: waiting until a workspace is quiet (the conformance kit's wait).
- :mod:`.reapers`: the autouse fixture that kills what a failing test left running.
- :mod:`.snapshots`: byte-exact tree snapshots, a worktree's files, and path listings.
- :mod:`.workspaces`: fixture instants, agents made directly, ready-made worlds.
- :mod:`.readers`: what a workspace holds (transcripts, inboxes, marks, subjects, locks).
- :mod:`.history`: git plumbing on a workspace copy (history surgery for the audit tests).
- :mod:`.provider_stub` and :mod:`.dialects`: a loopback provider and each provider's JSON;
  :mod:`.model_talk`: a conversation with the kit's model server through a client library.
- :mod:`.tool_calls`: one call of a work tool for a real agent.
- :mod:`.pause`: a production driver paused at a protocol point and killed there (SIGKILL).
- :mod:`.doc_commands`: the commands README.md and ``docs/`` show, and the check of each.
- :mod:`.light`: the modules the light paths may not load (R-CLI-5) and the check naming them.

Import style, everywhere: ``from tests.support.<module> import <name>``.
"""

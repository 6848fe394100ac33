"""Every exception of the library, grouped by what the caller can do about it (R-CLI-9).

Each is a :class:`LernieError`; its ``str()`` is the exact message the CLI edge prints
after ``lernie <verb>: `` (R-CLI-2), upstream's text where upstream is exact (R-CLI-3).
The groups, each a base class the CLI edge maps to its exit status in one table
(``lernie_ref.cli.EXIT_STATUS``):

- :class:`UsageError` (2): fix the command line;
- :class:`NotFound` (1): address a workspace or agent that is there;
- :class:`InvalidInput` (1): change a value that was refused (id, configuration, content);
- :class:`IntegrityError` (1): look at what the workspace holds; nothing was changed;
- :class:`ExternalFailure` (1): git, the OS, a process or the model failed; try again;
- :class:`WaitTimeout` (1), :class:`AgentsDied` (3), :class:`Interrupted` (130): how a
  wait ended;
- :class:`ToolError`: a work tool's failure, which the model sees as the call's result
  and no verb exits with.

A text that belongs to one class is made beside it (its constructor or a classmethod);
the renderings several classes share (Rust's ``{:?}`` and ``io::Error`` Display) come
first.
"""

from __future__ import annotations

from lernie_ref.core import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


# --------------------------------------------------------------- shared renderings


def debug_quote(s: str) -> str:
    """Render ``s`` the way Rust's ``{:?}`` renders a ``String`` (R-CLI-3).

    Double quotes; ``\\"`` ``\\\\`` ``\\n`` ``\\t`` ``\\r`` ``\\0`` escaped; other
    control characters as ``\\u{..}``; printable non-ASCII kept raw.
    """
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\0":
            out.append("\\0")
        elif not ch.isprintable() and ch != " ":
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def debug_list(items: Sequence[str]) -> str:
    """Rust ``{:?}`` of a ``Vec<String>``: ``["a", "b"]``."""
    return "[" + ", ".join(debug_quote(i) for i in items) + "]"


def io_text(err: OSError) -> str:
    """Render an OS error as Rust's ``io::Error`` Display: ``Permission denied (os error 13)``.

    Errors without an errno or text (rare: raised by Python itself) fall back to ``str(err)``.
    """
    if err.errno is None or not err.strerror:
        return str(err)
    return f"{err.strerror} (os error {err.errno})"


# --------------------------------------------------------------- the base and the groups


class LernieError(Exception):
    """Base of every error the library raises; ``str(e)`` is the user-facing text.

    The CLI exits 1 with it unless its group says otherwise (R-CLI-9).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(LernieError):
    """Bad command-line usage that argparse cannot see (text that is not UTF-8, an option
    without the one it needs); the CLI exits 2 and nothing was written."""


class NotFound(LernieError):
    """What the command addresses is not there: no workspace at the path (or one of the
    retired layout), no agent with that id or name, or a name several agents wear.
    Nothing was written; address what ``lernie status`` shows."""


class InvalidInput(LernieError):
    """A value the caller gave is refused as it stands: an id or a sender, the
    configuration (``lernie.toml`` or a ``LERNIE_*`` setting), the content, a new
    workspace's path, a model row, a stop sent from the caller's own process group.
    Nothing was written; change the value."""


class IntegrityError(LernieError):
    """What the workspace holds cannot be read as the protocol writes it: a transcript or
    a deposit that cannot be read as text or entry JSON, a tool call without its result, a
    link or a non-file where the protocol reads or writes. Nothing was changed and nothing
    is lost; the named file needs a look."""


class ExternalFailure(LernieError):
    """Something the protocol relies on failed: git, the operating system, a lock, a
    launch, a child process, the model. What was committed stays consistent (R-STEP-5);
    trying again (or ``lernie scan``) may succeed."""

    @classmethod
    def os_error(cls, what: str, err: OSError) -> ExternalFailure:
        """``<what>: <io>`` (``scan /proc: …``, ``walk inbox directory: …``)."""
        return cls(f"{what}: {io_text(err)}")


class ToolError(LernieError):
    """A work tool's call failed (R-TOOL-*): its result is an ``is_error`` one-liner the
    model reads; no verb exits with it."""


# --------------------------------------------------------------- not found (R-WS-2, R-ID-4/6)


class NotAWorkspace(NotFound):
    """R-WS-2: the path is not a workspace."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is not a workspace (no repo.git) — create one with `lernie new` (R-WS-2)"
        )
        self.path = path


class OldLayout(NotFound):
    """R-WS-2: the path is a workspace of the retired per-conversation layout."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} uses the retired per-conversation layout (a `root/` primary worktree with "
            "control files at the repo root); the current layout is one repo per workspace — "
            "`<workspace>/repo.git` (bare) with `config/*` branches and `agents/*` refs "
            "(R-WS-1, R-WS-2). There is no migration: create a fresh workspace with "
            "`lernie new` and re-author its config"
        )
        self.path = path


class UnknownAgent(NotFound):
    """R-ID-4: the existence guard found no ``refs/heads/agents/<id>``."""

    def __init__(self, agent_id: str, reason: str) -> None:
        super().__init__(
            f"no agent {debug_quote(agent_id)} in this workspace — {reason}; no agent has "
            "that id or wears that name: `lernie status <ws>` lists every agent with its "
            "name, `lernie prompt` / `lernie dispatch` start one"
        )
        self.agent_id = agent_id
        self.reason = reason


class AmbiguousName(NotFound):
    """R-ID-6: a name worn by two or more living agents."""

    def __init__(self, name: str, candidates: Sequence[str]) -> None:
        joined = ", ".join(sorted(candidates))
        super().__init__(
            f"agent name {debug_quote(name)} is ambiguous in this workspace — it is worn by "
            f"{joined}; address the one you mean by its agent id (R-ID-6)"
        )
        self.name = name
        self.candidates = tuple(sorted(candidates))


# --------------------------------------------------------------- invalid input


class NotAnAgentId(InvalidInput):
    """R-ID-3: the id guard declined an id."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(
            f"agent id {debug_quote(agent_id)} is not a single path component — an agent "
            "id is its branch name, the hyphenated descent `<a>-<b>-…` (R-ID-3); pass "
            "the id exactly as `lernie prompt` / `lernie dispatch` printed it"
        )
        self.agent_id = agent_id


class NotASender(InvalidInput):
    """R-ID-7: a sender whose deposit no reader could take (D-18)."""

    def __init__(self, sender: str) -> None:
        super().__init__(
            f"sender {debug_quote(sender)} cannot sign a deposit — a sender that starts with "
            "`.` is never read as pending mail, and one with a line break would forge "
            "frontmatter lines; set LERNIE_CONV_BRANCH to an agent id"
        )
        self.sender = sender


class ConfigError(InvalidInput):
    """The workspace configuration (``lernie.toml`` or a ``LERNIE_*`` override) is invalid,
    or a driver could not run with it (R-CLI-8)."""

    @classmethod
    def unknown_model(cls, name: str, where: str = "") -> ConfigError:
        """A model name other than the four (R-STEP-6), after ``<where>: `` when given."""
        text = f"unknown model {name!r}: the models are scripted, command, anthropic and openai"
        return cls(f"{where}: {text}" if where else text)


class ContentError(InvalidInput):
    """R-CLI-7: message content from standard input or ``--file`` could not be read."""


class WorkspaceError(InvalidInput):
    """``lernie new`` / agent creation refused (path taken, bad name, id collision)."""


class ReservedModelId(InvalidInput):
    """A model adapter named ``tool`` would write entries that read as tool results."""

    def __init__(self, model_id: str) -> None:
        super().__init__(
            f"model id {debug_quote(model_id)} collides with the reserved transcript origin "
            "token `tool` (R-TR-1); rename the model row"
        )


class SelfGroup(InvalidInput):
    """R-STOP-4: a holder lives in the caller's own process group; nothing was signalled."""

    def __init__(self, pgid: int) -> None:
        super().__init__(
            f"refusing to signal process group {pgid}: it is this process's own group, so the "
            "SIGTERM would fell whatever launched `lernie stop` — an operator's shell job, or a "
            "test runner — rather than an executor (R-STOP-4). Discovery resolved a pgid that "
            "no detached executor can legitimately own; nothing was signalled."
        )
        self.pgid = pgid


# --------------------------------------------------------------- integrity


class EntryError(IntegrityError):
    """R-TR-4: a transcript entry's bytes are not entry JSON."""


class TranscriptError(IntegrityError):
    """R-DEBT-1: the transcript could not be read; never read as "owes nothing"."""


class DrainError(IntegrityError):
    """A deposit could not be read or moved; it stays in the inbox (nothing is lost)."""


class ContainmentError(IntegrityError):
    """R-WS-7: a path the protocol writes would go through a symlink or a non-directory
    below the workspace root (or a non-file where a file belongs); nothing was written."""


class UnpairedToolUse(IntegrityError):
    """R-STEP-3: a ``tool_use`` id without a ``tool_result``: declined, never replayed."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(
            f"branch {agent_id} tip is an assistant entry with tool_use unmatched by committed "
            "tool results — a mid-step crash after the assistant entry landed; tool side effects "
            "are not replayable, so this is declined (R-STEP-3). Nothing can drive this "
            "agent on; start a new one with `lernie prompt` (or `lernie dispatch`) and give it "
            "what `lernie log` shows."
        )


# --------------------------------------------------------------- external failures


# Linux signal numbers and names, as Rust's ExitStatus prints them (kept here as data so the
# pure core imports no ``signal`` module).
_SIGNAL_NAMES = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
    16: "SIGSTKFLT",
    17: "SIGCHLD",
    18: "SIGCONT",
    19: "SIGSTOP",
    20: "SIGTSTP",
    21: "SIGTTIN",
    22: "SIGTTOU",
    23: "SIGURG",
    24: "SIGXCPU",
    25: "SIGXFSZ",
    26: "SIGVTALRM",
    27: "SIGPROF",
    28: "SIGWINCH",
    29: "SIGIO",
    30: "SIGPWR",
    31: "SIGSYS",
}


class GitError(ExternalFailure):
    """A git command failed (R-WS-6): ``git [args] exited with exit status: N: <stderr>``.

    git's stderr is folded into the one line (R-WS-6); a git killed by a signal reads
    ``exited with signal: 9 (SIGKILL)``. ``note`` is appended in parentheses.
    """

    def __init__(self, args: Sequence[str], returncode: int, stderr: str, note: str = "") -> None:
        detail = GitError.fold_lines(stderr)
        text = f"git {debug_list(list(args))} exited with {GitError.status_text(returncode)}"
        if detail:
            text += f": {detail}"
        if note:
            text += f" ({note})"
        super().__init__(text)
        self.args_ = tuple(args)
        self.returncode = returncode
        self.stderr = stderr

    @staticmethod
    def fold_lines(text: str) -> str:
        """Fold git's stderr into one line (R-WS-6, R-STEP-5: every error is one line).

        When some lines are git's own diagnostics (``fatal:``, ``error:``) only those are
        kept, so the paragraph of advice git prints after a lock failure does not bury
        them; otherwise every non-blank line. Lines are trimmed and joined by a space.
        """
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        marked = [line for line in lines if line.startswith(("fatal:", "error:"))]
        return " ".join(marked or lines)

    @staticmethod
    def status_text(returncode: int) -> str:
        """Rust's ``ExitStatus`` Display: ``exit status: N``, or ``signal: N (SIGNAME)`` for a
        process killed by a signal (``subprocess`` reports those as ``-N``)."""
        if returncode >= 0:
            return f"exit status: {returncode}"
        name = _SIGNAL_NAMES.get(-returncode)
        return f"signal: {-returncode} ({name})" if name else f"signal: {-returncode}"


class GitOpError(ExternalFailure):
    """A git failure labelled with the protocol operation it served: ``git {op}: {source}``."""

    def __init__(self, op: str, source: Exception) -> None:
        super().__init__(f"git {op}: {source}")
        self.op = op
        self.source = source


class StaleLockError(ExternalFailure):
    """R-WS-8: a git lock file the holder owns is still in use by a live git after the
    bounded wait, or could not be removed."""


class LockError(ExternalFailure):
    """R-LOCK-1: try-acquire failed with an error other than ``EWOULDBLOCK``.

    ``detail`` is the Rust-style io text; ``str()`` is the text ``lernie advance`` prints.
    """

    def __init__(self, path: object, detail: str) -> None:
        super().__init__(f"acquire executor lock on inbox {path}: {detail}")
        self.path = path
        self.detail = detail


class AdoptError(ExternalFailure):
    """R-LOCK-4: ``LERNIE_LOCK_FD`` could not be adopted; ``str()`` is the variant text."""

    @classmethod
    def lease(cls, agent_id: str, detail: str) -> AdoptError:
        """The hop's text: a baton that cannot be adopted declines the hop (never a fresh
        acquire)."""
        return cls(
            f"adopt LERNIE_LOCK_FD lease for {agent_id}: {detail} — a bad fd means a defective "
            "launcher; declined, never silently reacquired (R-LOCK-4)"
        )


class ExecError(ExternalFailure):
    """R-LOCK-3: the successor could not be exec'd; the lease is released, exit 1."""


class DepositError(ExternalFailure):
    """R-DEP: ``inbox i/o at {path}: {io}`` or ``mark refs/lernie/returned/{child}: {source}``."""

    @classmethod
    def io(cls, path: object, err: OSError) -> DepositError:
        return cls(f"inbox i/o at {path}: {io_text(err)}")

    @classmethod
    def mark(cls, child: str, source: object) -> DepositError:
        return cls(f"mark refs/lernie/returned/{child}: {source}")

    @classmethod
    def result(cls, source: DepositError) -> DepositError:
        """A result deposit failed under the lease; upstream labels every executor deposit
        error ``deposit initial user message: …``, and so does this text (R-STEP-5)."""
        return cls(f"deposit initial user message: {source}")


class LaunchError(ExternalFailure):
    """R-LAUNCH-2: a launcher could not start the driver; ``str()`` is the io text."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class ProbeError(ExternalFailure):
    """R-PROBE-4: the probe or the launch after it failed: ``probe executor lock: {io}``."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"probe executor lock: {detail}")
        self.detail = detail


class ScanError(ExternalFailure):
    """A scan pass aborted; effects already made (deposits, launches) stay (R-SCAN-7)."""


class ModelError(ExternalFailure):
    """The model call failed; the hop exits 1 with this one line and commits nothing."""


# --------------------------------------------------------------- work tools (never a verb's exit)


class ToolInputError(ToolError):
    """The model's tool input does not match the tool's schema."""


class PatchError(ToolError):
    """R-TOOL-5: a patch envelope that does not parse or does not apply; nothing was written."""


class ToolPathError(ToolError):
    """R-TOOL-2: a path a file tool may not reach (absolute, ``..``, a link, ``.git``)."""


# --------------------------------------------------------------- how a wait ended (R-LOG-2)


class WaitTimeout(LernieError):
    """The tree did not settle in time; the text names what is still going on (exit 1)."""


class AgentsDied(LernieError):
    """R-LOG-2: the tree settled, but some of its agents died or gave up; the CLI exits 3."""


class Interrupted(LernieError):
    """Ctrl-C (SIGINT) ended the verb; the CLI exits 130, as a shell reports SIGINT."""


# --------------------------------------------------------------- not the caller's: a bug


class FrozenRecordError(AttributeError):
    """Assignment to a field of a frozen record (``lernie_ref.core.record``), as
    ``dataclasses.FrozenInstanceError``: a programming error, never a verb's."""

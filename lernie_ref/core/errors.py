"""Typed exceptions of the library and the Display texts upstream prints.

Every exception class of the library is defined here, once. Each is a :class:`LernieError`
with an ``exit_code`` (1, or 2 for usage) the CLI exits with; its ``str()`` is the
exact message the CLI edge prints after ``lernie <verb>: `` (R-CLI-2). Texts are
upstream's where upstream is exact (spec/SPEC.md, "Exact strings").
"""

from __future__ import annotations

TYPE_CHECKING = False  # no collections.abc on the message path (R-CLI-5)
if TYPE_CHECKING:
    from collections.abc import Sequence


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


class LernieError(Exception):
    """Base of every error the library raises; ``str(e)`` is the user-facing text.

    ``exit_code`` is the status the CLI exits with (R-CLI-2): 1, or 2 for a usage error.
    """

    exit_code: int = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(LernieError):
    """Bad command-line usage that argparse cannot see; the CLI exits 2."""

    exit_code = 2


class NotAnAgentId(LernieError):
    """R-ID-3: the id guard declined an id."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(
            f"agent id {debug_quote(agent_id)} is not a single path component — an agent "
            "id is its branch name, the hyphenated descent `<a>-<b>-…` (R-ID-3); pass "
            "the id exactly as `lernie prompt` / `lernie dispatch` printed it"
        )
        self.agent_id = agent_id


class NotASender(LernieError):
    """R-ID-7: a sender whose deposit no reader could take (D-18)."""

    def __init__(self, sender: str) -> None:
        super().__init__(
            f"sender {debug_quote(sender)} cannot sign a deposit — a sender that starts with "
            "`.` is never read as pending mail, and one with a line break would forge "
            "frontmatter lines; set LERNIE_CONV_BRANCH to an agent id"
        )
        self.sender = sender


class LayoutError(LernieError):
    """R-WS-2: the path is not a workspace (or uses the retired layout)."""


class NotAWorkspace(LayoutError):
    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} is not a workspace (no repo.git) — create one with `lernie new` (R-WS-2)"
        )
        self.path = path


class OldLayout(LayoutError):
    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path} uses the retired per-conversation layout (a `root/` primary worktree with "
            "control files at the repo root); the current layout is one repo per workspace — "
            "`<workspace>/repo.git` (bare) with `config/*` branches and `agents/*` refs "
            "(R-WS-1, R-WS-2). There is no migration: create a fresh workspace with "
            "`lernie new` and re-author its config"
        )
        self.path = path


class UnknownAgent(LernieError):
    """R-ID-4: the existence guard found no ``refs/heads/agents/<id>``."""

    def __init__(self, agent_id: str, reason: str) -> None:
        super().__init__(
            f"no agent {debug_quote(agent_id)} in this workspace — {reason}; no agent has "
            "that id or wears that name: `lernie status <ws>` lists every agent with its "
            "name, `lernie prompt` / `lernie dispatch` start one"
        )
        self.agent_id = agent_id
        self.reason = reason


class AmbiguousName(LernieError):
    """R-ID-6: a name worn by two or more living agents."""

    def __init__(self, name: str, candidates: Sequence[str]) -> None:
        joined = ", ".join(sorted(candidates))
        super().__init__(
            f"agent name {debug_quote(name)} is ambiguous in this workspace — it is worn by "
            f"{joined}; address the one you mean by its agent id (R-ID-6)"
        )
        self.name = name
        self.candidates = tuple(sorted(candidates))


def fold_lines(text: str) -> str:
    """Fold git's stderr into one line (R-WS-6, R-STEP-5: every error is one line).

    When some lines are git's own diagnostics (``fatal:``, ``error:``) only those are
    kept, so the paragraph of advice git prints after a lock failure does not bury
    them; otherwise every non-blank line. Lines are trimmed and joined by a space.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    marked = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return " ".join(marked or lines)


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


def exit_status_text(returncode: int) -> str:
    """Rust's ``ExitStatus`` Display: ``exit status: N``, or ``signal: N (SIGNAME)`` for a
    process killed by a signal (``subprocess`` reports those as ``-N``)."""
    if returncode >= 0:
        return f"exit status: {returncode}"
    name = _SIGNAL_NAMES.get(-returncode)
    return f"signal: {-returncode} ({name})" if name else f"signal: {-returncode}"


class GitError(LernieError):
    """A git command failed (R-WS-6): ``git [args] exited with exit status: N: <stderr>``.

    git's stderr is folded into the one line (R-WS-6); a git killed by a signal reads
    ``exited with signal: 9 (SIGKILL)``. ``note`` is appended in parentheses.
    """

    def __init__(self, args: Sequence[str], returncode: int, stderr: str, note: str = "") -> None:
        detail = fold_lines(stderr)
        text = f"git {debug_list(list(args))} exited with {exit_status_text(returncode)}"
        if detail:
            text += f": {detail}"
        if note:
            text += f" ({note})"
        super().__init__(text)
        self.args_ = tuple(args)
        self.returncode = returncode
        self.stderr = stderr


class GitOpError(LernieError):
    """A git failure labelled with the protocol operation it served: ``git {op}: {source}``."""

    def __init__(self, op: str, source: Exception) -> None:
        super().__init__(f"git {op}: {source}")
        self.op = op
        self.source = source


def io_text(err: OSError) -> str:
    """Render an OS error as Rust's ``io::Error`` Display: ``Permission denied (os error 13)``.

    Errors without an errno or text (rare: raised by Python itself) fall back to ``str(err)``.
    """
    if err.errno is None or not err.strerror:
        return str(err)
    return f"{err.strerror} (os error {err.errno})"


class EntryError(LernieError):
    """R-TR-4: a transcript entry's bytes are not entry JSON."""


class ConfigError(LernieError):
    """The workspace configuration (``lernie.toml`` or a ``LERNIE_*`` override) is invalid."""


class LockError(LernieError):
    """R-LOCK-1: try-acquire failed with an error other than ``EWOULDBLOCK``.

    ``detail`` is the Rust-style io text; ``str()`` is the text ``lernie advance`` prints.
    """

    def __init__(self, path: object, detail: str) -> None:
        super().__init__(f"acquire executor lock on inbox {path}: {detail}")
        self.path = path
        self.detail = detail


class AdoptError(LernieError):
    """R-LOCK-4: ``LERNIE_LOCK_FD`` could not be adopted; ``str()`` is the variant text."""


class DepositError(LernieError):
    """R-DEP: ``inbox i/o at {path}: {io}`` or ``mark refs/lernie/returned/{child}: {source}``."""

    @classmethod
    def io(cls, path: object, err: OSError) -> DepositError:
        return cls(f"inbox i/o at {path}: {io_text(err)}")

    @classmethod
    def mark(cls, child: str, source: object) -> DepositError:
        return cls(f"mark refs/lernie/returned/{child}: {source}")


class LaunchError(LernieError):
    """R-LAUNCH-2: a launcher could not start the driver; ``str()`` is the io text."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class ProbeError(LernieError):
    """R-PROBE-4: the probe or the launch after it failed: ``probe executor lock: {io}``."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"probe executor lock: {detail}")
        self.detail = detail


class TranscriptError(LernieError):
    """R-DEBT-1: the transcript could not be read; never read as "owes nothing"."""


class ContentError(LernieError):
    """R-CLI-7: message content from standard input or ``--file`` could not be read."""


class ContainmentError(LernieError):
    """R-WS-7: a path the protocol writes would go through a symlink or a non-directory
    below the workspace root (or a non-file where a file belongs); nothing was written."""


class WorkspaceError(LernieError):
    """``lernie new`` / agent creation refused (path taken, bad name, id collision)."""


# --------------------------------------------------------------- raised by substrate.transcript


class ReservedModelId(LernieError):
    """A model adapter named ``tool`` would write entries that read as tool results."""

    def __init__(self, model_id: str) -> None:
        super().__init__(
            f"model id {debug_quote(model_id)} collides with the reserved transcript origin "
            "token `tool` (R-TR-1); rename the model row"
        )


# --------------------------------------------------------------- raised by actors.drain


class DrainError(LernieError):
    """A deposit could not be read or moved; it stays in the inbox (nothing is lost)."""


# --------------------------------------------------------------- raised by actors.hop


class UnpairedToolUse(LernieError):
    """R-STEP-3: a ``tool_use`` id without a ``tool_result``: declined, never replayed."""

    def __init__(self, agent_id: str) -> None:
        super().__init__(
            f"branch {agent_id} tip is an assistant entry with tool_use unmatched by committed "
            "tool results — a mid-step crash after the assistant entry landed; tool side effects "
            "are not replayable, so this is declined (R-STEP-3). Nothing can drive this "
            "agent on; start a new one with `lernie prompt` (or `lernie dispatch`) and give it "
            "what `lernie log` shows."
        )


class LeaseAdoptError(LernieError):
    """R-LOCK-4: a baton that cannot be adopted declines the hop (never a fresh acquire)."""

    def __init__(self, agent_id: str, detail: str) -> None:
        super().__init__(
            f"adopt LERNIE_LOCK_FD lease for {agent_id}: {detail} — a bad fd means a defective "
            "launcher; declined, never silently reacquired (R-LOCK-4)"
        )


# --------------------------------------------------------------- raised by actors.exit_protocol


class ResultDepositError(LernieError):
    """A result deposit failed under the lease; upstream labels every executor deposit error
    ``deposit initial user message: …`` (R-STEP-5), and so does this text."""

    def __init__(self, source: DepositError) -> None:
        super().__init__(f"deposit initial user message: {source}")


# --------------------------------------------------------------- raised by actors.sweep


class ScanError(LernieError):
    """A scan pass aborted; effects already made (deposits, launches) stay (R-SCAN-7)."""


# --------------------------------------------------------------- raised by actors.tools


class ToolInputError(LernieError):
    """The model's tool input does not match the tool's schema."""


class ToolError(LernieError):
    """A work tool's call failed (R-TOOL-*): its result is an ``is_error`` one-liner."""


class PatchError(ToolError):
    """R-TOOL-5: a patch envelope that does not parse or does not apply; nothing was written."""


class ToolPathError(ToolError):
    """R-TOOL-2: a path a file tool may not reach (absolute, ``..``, a link, ``.git``)."""


# --------------------------------------------------------------- raised by adapters.__init__


class ModelError(LernieError):
    """The model call failed; the hop exits 1 with this one line and commits nothing."""


# --------------------------------------------------------------- raised by operator.stop


class StopError(LernieError):
    """An error of ``lernie stop``; ``str()`` is upstream's text where upstream has one."""


class SelfGroup(StopError):
    """R-STOP-4: a holder lives in the caller's own process group; nothing was signalled."""

    def __init__(self, pgid: int) -> None:
        super().__init__(
            f"refusing to signal process group {pgid}: it is this process's own group, so the "
            "SIGTERM would fell whatever launched `lernie stop` — an operator's shell job, or a "
            "test runner — rather than an executor (R-STOP-4). Discovery resolved a pgid that "
            "no detached executor can legitimately own; nothing was signalled."
        )
        self.pgid = pgid


class ProcError(StopError):
    def __init__(self, err: OSError) -> None:
        super().__init__(f"scan /proc: {io_text(err)}")


class InboxWalkError(StopError):
    def __init__(self, err: OSError) -> None:
        super().__init__(f"walk inbox directory: {io_text(err)}")


# --------------------------------------------------------------- raised by operator.wait


class WaitTimeout(LernieError):
    """The tree did not settle in time; the text names what is still going on."""


class AgentsDied(LernieError):
    """R-LOG-2: the tree settled, but some of its agents died or gave up; the CLI exits 3."""

    exit_code = 3


class Interrupted(LernieError):
    """Ctrl-C (SIGINT) ended the verb; the CLI exits 130, as a shell reports SIGINT."""

    exit_code = 130


# --------------------------------------------------------------- raised by cli.advance


class ExecError(LernieError):
    """R-LOCK-3: the successor could not be exec'd; the lease is released, exit 1."""

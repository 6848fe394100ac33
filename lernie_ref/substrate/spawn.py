"""Running a child process with ``os.posix_spawn`` and nothing heavier (R-CLI-5).

``subprocess`` loads ``signal`` with ``enum``, ``threading``, ``selectors``, ``locale``
and more: a large part of a short command's start-up (R-CLI-5). The two kinds of child
the reference starts need little of it: a detached driver (``launcher``) and a ``git``
whose output is collected (``gitrun``). Both go through here, with what
``subprocess`` would have given them kept:

- descriptors an exec would pass on (opened without close-on-exec by someone else,
  such as the process's own parent) are closed in the child, as ``close_fds`` does:
  a child must never hold a copy of a descriptor that is not its own (bl-7318);
- ``SIGPIPE`` and ``SIGXFSZ`` are back at their default action in the child
  (``restore_signals``): the interpreter ignores them, a child must not inherit that;
- a program named without a ``/`` is searched on the ``PATH`` of the child's
  environment: the first executable regular file of that name;
- :func:`run_captured` feeds the input and reads stdout and stderr together, so no
  pipe fills while another is waited on, and a child interrupted by an exception in
  the parent is killed and reaped before the exception goes on.
"""

from __future__ import annotations

import os

from lernie_ref.core import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

_SIGPIPE, _SIGXFSZ, _SIGKILL = 13, 25, 9
"""Linux's numbers (``signal`` would load ``enum``); checked against ``signal`` by a test."""


def inherited_fds(*keep: int) -> list[int]:
    """Descriptors above 2 that an exec would pass on, ``keep`` excepted."""
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(listing)
        except OSError:
            continue
        out = []
        for name in names:
            fd = int(name)
            if fd <= 2 or fd in keep:
                continue
            try:
                if os.get_inheritable(fd):
                    out.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                continue
        return out
    return []


def spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    actions: Sequence[tuple[object, ...]],
    *,
    setsid: bool = False,
    keep: tuple[int, ...] = (),
    until_exec: bool = False,
) -> int:
    """Start ``argv`` with the file ``actions`` and return its pid (see the module's rules).

    With ``until_exec`` it returns only once the child's ``execve`` is through (its
    close-on-exec descriptors are closed, so ``/proc/<pid>/exe`` is the new program):
    ``posix_spawn`` itself may return while the child is still inside the ``execve``. The
    parent sleeps on a close-on-exec pipe whose other end only the child holds, and wakes
    at its end of file; the child is past the ``execve``'s point of no return by then, so
    the end comes (or the child dies, which ends it too). Only a child that another thread
    forked in that moment and that never execs could hold a copy longer: the reference
    starts none (every child it starts execs at once).

    An ``OSError`` is the exec's own (``FileNotFoundError`` for a program not found)."""
    closing = [(os.POSIX_SPAWN_CLOSE, fd) for fd in inherited_fds(*keep)]
    path = _resolve(argv[0], env)
    if not until_exec:
        return _posix_spawn(path, argv, env, [*actions, *closing], setsid)
    watch, held = os.pipe()  # both close-on-exec: the child's copy of `held` goes at execve
    try:
        pid = _posix_spawn(path, argv, env, [*actions, *closing], setsid)
    except BaseException:
        os.close(watch)
        raise
    finally:
        os.close(held)
    try:
        os.read(watch, 1)  # b"": no copy of `held` is left open
    finally:
        os.close(watch)
    return pid


def _posix_spawn(
    path: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    file_actions: list[tuple[object, ...]],
    setsid: bool,
) -> int:
    return os.posix_spawn(
        path,
        list(argv),
        env,
        file_actions=file_actions,
        setsid=setsid,
        setsigdef=(_SIGPIPE, _SIGXFSZ),
    )


def _resolve(program: str, env: Mapping[str, str]) -> str:
    """``program`` itself when it names a path; else the first executable file of that name
    in a directory of the environment's ``PATH`` (looked up here, so a failed try costs a
    ``stat``, not a process). None found: ``FileNotFoundError`` naming the program."""
    if "/" in program:
        return program
    import stat

    for directory in os.get_exec_path(dict(env)):
        path = os.path.join(directory, program)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(2, "No such file or directory", program)


def run_captured(
    argv: Sequence[str], env: Mapping[str, str], input: bytes | None = None
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` to its end; ``(returncode, stdout, stderr)``, the return code negative
    for a child killed by a signal, as ``subprocess`` gives it. With ``input`` it is the
    child's stdin (then closed); without, the child reads this process's stdin."""
    import select

    out_r, out_w = os.pipe()  # close-on-exec: only the child's 1 and 2 carry them on
    err_r, err_w = os.pipe()
    in_r = in_w = -1
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_DUP2, out_w, 1),
        (os.POSIX_SPAWN_DUP2, err_w, 2),
    ]
    try:
        if input is not None:
            in_r, in_w = os.pipe()
            actions.append((os.POSIX_SPAWN_DUP2, in_r, 0))
        pid = spawn(argv, env, actions)
    except BaseException:
        for fd in (out_r, out_w, err_r, err_w, in_r, in_w):
            if fd >= 0:
                os.close(fd)
        raise
    for fd in (out_w, err_w, in_r):
        if fd >= 0:
            os.close(fd)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    poller = select.poll()
    poller.register(out_r, select.POLLIN)
    poller.register(err_r, select.POLLIN)
    view = memoryview(input or b"")
    sent = 0
    if in_w >= 0:
        if view:
            poller.register(in_w, select.POLLOUT)
        else:
            os.close(in_w)
            in_w = -1
    reading = 2
    try:
        while reading or in_w >= 0:
            for fd, _ in poller.poll():
                if fd == in_w:
                    try:
                        sent += os.write(in_w, view[sent : sent + select.PIPE_BUF])
                    except BrokenPipeError:  # the child stopped reading: the rest is moot
                        sent = len(view)
                    if sent >= len(view):
                        poller.unregister(in_w)
                        os.close(in_w)
                        in_w = -1
                    continue
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    reading -= 1
    except BaseException:
        os.kill(pid, _SIGKILL)  # not reaped yet, so the pid is still this child's
        os.waitpid(pid, 0)
        raise
    finally:
        for fd in (out_r, err_r, in_w):
            if fd >= 0:
                os.close(fd)
    _, status = os.waitpid(pid, 0)
    return (
        os.waitstatus_to_exitcode(status),
        b"".join(chunks[out_r]),
        b"".join(chunks[err_r]),
    )

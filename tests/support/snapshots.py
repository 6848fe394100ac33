"""What a directory tree holds, to prove a command changed nothing (or exactly something)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def snapshot(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every path under ``root`` with its kind and bytes: a byte-identical comparison key."""
    out: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                out[rel] = ("link", os.readlink(path).encode())
            elif stat.S_ISDIR(mode):
                out[rel] = ("dir", b"")
            else:
                out[rel] = ("file", path.read_bytes())
    return out


def snapshot_with_mtimes(root: Path) -> dict[str, object]:
    """:func:`snapshot` plus every directory's mtime, so a file written there and moved away
    again still shows."""
    stamps = {str(Path(d).relative_to(root)): os.stat(d).st_mtime_ns for d, _, _ in os.walk(root)}
    return {"contents": snapshot(root), "dirs": stamps}


def tree_listing(root: Path) -> list[str]:
    """Every path under ``root`` except git internals (to prove nothing was written)."""
    out = []
    for base, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "repo.git"]
        for name in dirs + files:
            out.append(os.path.relpath(os.path.join(base, name), root))
    return sorted(out)


def worktree_files(root: Path) -> dict[str, bytes]:
    """Every regular file below ``root`` but ``.git`` (a link is recorded by its target)."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath) / name
            if name == ".git" and Path(dirpath) == root:
                continue
            key = str(path.relative_to(root))
            out[key] = (b"link:" + os.readlink(path).encode()) if path.is_symlink() else (
                path.read_bytes())
    return out

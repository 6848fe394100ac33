"""A real browser for the HTML reports: headless Chromium from the system's packages.

`open_report(path, shot)` loads a report file twice, as a person's browser would: once
to read the document after its scripts ran (`--dump-dom`) together with every console
message the page printed, once to draw it (`--screenshot`). Name lookups are mapped to
nowhere, so a report that reached for the network would show it. `pixels` decodes the
screenshot (PNG, 8-bit RGB or RGBA, as Chromium writes it) with the standard library,
so a test can look for the colours a person would see.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = Path(os.environ.get("LERNIE_TEST_ARTEFACTS", ROOT / "build" / "test-artefacts"))


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class Loaded:
    dom: str
    console: list[str]  # every console message (the reports print none)
    screenshot: Path


def _flags(profile: str) -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
            "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"]


def open_report(path: Path, shot: Path, width: int = 1400, height: int = 1000) -> Loaded:
    exe = chromium()
    assert exe is not None
    url = path.resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="lernie-chromium-") as profile:
        dom = subprocess.run([exe, *_flags(profile), "--dump-dom", url], capture_output=True,
                             text=True, timeout=120, check=True)
        shot.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([exe, *_flags(profile), f"--window-size={width},{height}",
                        f"--screenshot={shot}", url], capture_output=True, text=True,
                       timeout=120, check=True)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    return Loaded(dom.stdout, console, shot)


def pixels(png: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of a non-interlaced 8-bit RGB/RGBA PNG."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = colour = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 0xFF
            elif f == 2:
                line[x] = (line[x] + b) & 0xFF
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 0xFF
        prev = line
        rows.append(bytes(line) if bpp == 3 else bytes(
            v for k, v in enumerate(line) if k % 4 != 3))
    return width, height, rows


def count_colour(png: Path, rgb: tuple[int, int, int], tolerance: int = 24) -> int:
    """How many pixels of the screenshot are within `tolerance` of `rgb`."""
    _, _, rows = pixels(png)
    r0, g0, b0 = rgb
    n = 0
    for row in rows:
        for x in range(0, len(row), 3):
            if (abs(row[x] - r0) <= tolerance and abs(row[x + 1] - g0) <= tolerance
                    and abs(row[x + 2] - b0) <= tolerance):
                n += 1
    return n

"""Run the real ``lernie`` CLI with the production launcher replaced by a recorder.

The test injects the launcher (R-LAUNCH-1: the launcher is injected); production code is
unchanged. Launches are appended to the file named by ``LAUNCH_LOG``.
"""

from __future__ import annotations

import os
from pathlib import Path

from lernie_ref import inbox
from lernie_ref.cli import entry


class RecordingAdvanceLauncher:
    def __init__(self, argv_prefix: object = None) -> None:
        self.log = Path(os.environ["LAUNCH_LOG"])

    def launch(self, ws: Path, agent_id: str) -> None:
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write(f"{ws}\t{agent_id}\n")


inbox.AdvanceLauncher = RecordingAdvanceLauncher  # type: ignore[misc,assignment]
entry()

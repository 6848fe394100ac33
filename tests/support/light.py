"""What the light paths may not load (R-CLI-5), and the check that names what they did.

The modules below are the guard of ``lernie message``'s start-up: no comment beside an
import keeps them off the path, this list does (``lernie_ref.core`` is the one
idiom the package uses to keep them off).
"""

from __future__ import annotations

HEAVY_FOR_MESSAGE = frozenset(
    {
        "pathlib", "re", "enum", "typing", "subprocess", "argparse", "dataclasses",
        "shutil", "contextlib", "collections", "signal", "json", "tomllib",
    }
)  # fmt: skip
"""The modules ``lernie message`` never loads. Each costs a share of its start-up
(``typing``, ``enum`` and ``collections`` together about as much as the deposit)."""

HEAVY_FOR_OPERATOR = frozenset({"typing", "subprocess", "argparse", "dataclasses", "inspect"})
"""What ``lernie scan`` and ``lernie status`` never load (``json`` only when a model entry or
``--json`` needs it)."""

FOR_FLAGGED_ROWS = frozenset(
    {"lernie_ref.operator.driverlog", "lernie_ref.substrate.preflight",
     "lernie_ref.substrate.configtext"}
)  # fmt: skip
"""What ``lernie scan`` and ``lernie status`` load only for the rows that need it: a driver
log for an agent flagged dead or stranded (R-STATUS-5, R-SCAN-10), the configuration's
words once a scan launched a driver (R-STEP-9); a quiet workspace loads none of them."""


def check_light(loaded: frozenset[str] | set[str], heavy: frozenset[str], command: str) -> None:
    """Fail, naming them, when ``command`` loaded any of the ``heavy`` modules."""
    hits = sorted(set(loaded) & heavy)
    assert not hits, (
        f"`{command}` loaded {', '.join(hits)}, which R-CLI-5 keeps off its path; import "
        "them under `if TYPE_CHECKING:` (lernie_ref.core) or inside the function that "
        "needs them"
    )

"""Start-up kept light in one place (R-CLI-5).

``lernie message`` runs a handful of protocol steps, and importing ``typing`` (or
``collections.abc``, ``pathlib``, ``enum``, ...) would cost a fair share of its run. So a
module of the package imports the names it needs only for annotations under this
module's :data:`TYPE_CHECKING`, never ``typing``'s::

    from __future__ import annotations

    from lernie_ref.core.lean import TYPE_CHECKING

    if TYPE_CHECKING:
        from collections.abc import Sequence

With ``from __future__ import annotations`` no annotation is evaluated at run time, so
those names are never looked up; mypy reads any ``if TYPE_CHECKING:`` as true and
checks them. A class that is a protocol for the checker derives from :data:`Protocol`
here, which is ``object`` at run time.

This is the only start-up idiom the package uses. What each light path may load is
not written beside the imports: the import test (``tests/foundation/test_message_path.py``)
names the modules ``lernie message``, ``lernie scan`` and ``lernie status`` must not
load and fails, naming them, when one does.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol as Protocol
else:
    Protocol = object

"""The pure core of the reference (no I/O), and its start-up idiom, kept in one place (R-CLI-5).

``lernie message`` runs a handful of protocol steps, and importing ``typing`` (or
``collections.abc``, ``pathlib``, ``enum``, ...) would cost a fair share of its run. So a
module of the package imports the names it needs only for annotations under this
package's :data:`TYPE_CHECKING`, never ``typing``'s::

    from __future__ import annotations

    from lernie_ref.core import TYPE_CHECKING

    if TYPE_CHECKING:
        from collections.abc import Sequence

With ``from __future__ import annotations`` no annotation is evaluated at run time, so
those names are never looked up; mypy reads any ``if TYPE_CHECKING:`` as true and
checks them. A class that is a protocol for the checker derives from :data:`Protocol`
here, which is ``object`` at run time.

The constants live in this package's ``__init__`` because every path has loaded it
before its first module of the core: the idiom costs no import of its own.

This is the only start-up idiom the package uses. What each light path may load is not
written beside the imports: the import tests (``tests/foundation/test_message_path.py``,
with the list in ``tests/support/light.py``) name the modules ``lernie message``,
``lernie scan`` and ``lernie status`` must not load, and fail naming any that one loads.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol as Protocol
else:
    Protocol = object

"""A CrossHair plugin that works around one engine bug (loaded with ``--extra_plugin``).

CrossHair 0.0.113 can abort a whole ``crosshair check`` run with
``CrossHairInternal: SymbolicBoundedIntTuple._created_vars exceeded actual length``
when a symbolic string is sliced from its end (``s.endswith("\\r")``) after an
earlier comparison created more element variables than the realized length.
The variables past the realized length belong to no character, so the right
answer is the slice of the first ``len`` variables; this plugin returns that
instead of aborting. If CrossHair changes so the patched class is gone, the
plugin does nothing. CrossHair runs plugins with ``exec``, so everything lives
inside one function.
"""

from __future__ import annotations


def _install() -> None:
    from crosshair.core import realize
    from crosshair.libimpl import builtinslib
    from crosshair.tracers import NoTracing
    from crosshair.util import CrossHairInternal

    cls = getattr(builtinslib, "SymbolicBoundedIntTuple", None)
    if cls is None or getattr(cls, "_lernie_patched", False):
        return
    original = cls.__getitem__

    def getitem(self: object, argument: object) -> object:
        try:
            return original(self, argument)
        except CrossHairInternal as exc:
            if "exceeded actual length" not in str(exc) or not isinstance(argument, slice):
                raise
            with NoTracing():  # type: ignore[no-untyped-call]
                length = realize(self._len)  # type: ignore[attr-defined]
                window = slice(
                    realize(argument.start), realize(argument.stop), realize(argument.step)
                )
                return self._created_vars[:length][window]  # type: ignore[attr-defined]

    cls.__getitem__ = getitem
    cls._lernie_patched = True


_install()

"""Plain records without ``dataclasses`` at run time (R-CLI-5).

``dataclasses`` loads ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``): about a
third of what ``lernie scan`` and ``lernie status`` spent importing. The records those
verbs use are flat (named fields, plain defaults, equality, a ``repr``, some frozen),
so :func:`record` makes them at run time: the checker sees ``dataclasses.dataclass``
itself, and each class here behaves as that would for the subset used:

- ``__init__`` takes the fields in order, by position or by name, defaults last;
  a default given as ``field(default_factory=f)`` calls ``f`` per instance;
- ``__eq__`` compares the fields in order between instances of the one class;
- ``frozen=True`` refuses assignment and hashes the fields; otherwise unhashable;
- ``__repr__`` is ``Name(field=value, …)``; :func:`as_dict` is ``asdict`` for
  records whose fields hold plain values (no record inside a record).
"""

from __future__ import annotations

from lernie_ref.core import TYPE_CHECKING

if TYPE_CHECKING:
    from dataclasses import asdict as as_dict
    from dataclasses import dataclass as record
    from dataclasses import field
else:
    from lernie_ref.core.errors import FrozenRecordError

    class _Factory:
        __slots__ = ("make",)

        def __init__(self, make):
            self.make = make

    def field(*, default_factory):
        """A default made afresh for each instance."""
        return _Factory(default_factory)

    def _frozen_setattr(self, name, value):
        raise FrozenRecordError(f"cannot assign to field {name!r}")

    def _frozen_delattr(self, name):
        raise FrozenRecordError(f"cannot delete field {name!r}")

    def record(cls=None, /, *, frozen=False):
        """Make ``cls`` a record of its annotated fields (see the module's rules)."""

        def make(cls):
            # inspect.get_annotations would load inspect, what this module avoids
            names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
            defaults = {}
            for name in names:
                if name in cls.__dict__:
                    defaults[name] = cls.__dict__[name]
                    if isinstance(defaults[name], _Factory):
                        delattr(cls, name)
            qualname = cls.__qualname__
            # One __init__ made per class, as dataclasses makes it: a plain function with the
            # fields as parameters (the names are identifiers: they are annotations).
            namespace: dict[str, object] = {"_set": object.__setattr__, "_MISSING": _Factory}
            params, body = [], []
            for name in names:
                if name not in defaults:
                    params.append(name)
                    body.append(f"    _set(self, {name!r}, {name})")
                elif isinstance(defaults[name], _Factory):
                    namespace[f"_make_{name}"] = defaults[name].make
                    params.append(f"{name}=_MISSING")
                    made = f"_make_{name}() if {name} is _MISSING else {name}"
                    body.append(f"    _set(self, {name!r}, {made})")
                else:
                    namespace[f"_default_{name}"] = defaults[name]
                    params.append(f"{name}=_default_{name}")
                    body.append(f"    _set(self, {name!r}, {name})")
            source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"])
            exec(source, namespace)  # built from the class's own field names only
            __init__ = namespace["__init__"]
            __init__.__qualname__ = f"{qualname}.__init__"

            def _values(self):
                return tuple(getattr(self, name) for name in names)

            def __eq__(self, other):
                if other.__class__ is not self.__class__:
                    return NotImplemented
                return _values(self) == _values(other)

            def __repr__(self):
                inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
                return f"{qualname}({inner})"

            cls.__init__ = __init__
            cls.__eq__ = __eq__
            cls.__repr__ = __repr__
            cls.__record_fields__ = names
            cls.__match_args__ = names
            if frozen:
                cls.__setattr__ = _frozen_setattr
                cls.__delattr__ = _frozen_delattr
                cls.__hash__ = lambda self: hash(_values(self))
            else:
                cls.__hash__ = None
            return cls

        return make if cls is None else make(cls)

    def as_dict(obj):
        """The record's fields as a dict, in field order."""
        return {name: getattr(obj, name) for name in obj.__record_fields__}


__all__ = ["as_dict", "field", "record"]

"""The executable model of the lernie protocol and its explorer (see SPEC.md)."""

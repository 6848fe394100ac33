"""The kit's model speaks the work tools' directives (docs/models.md) exactly as the
reference's scripted model does: the same calls, with the same inputs, in the same order,
so the conformance kit's programs script tool work alike on every implementation."""

from __future__ import annotations

import pytest
from lernie_stateful.conform.kit_model import Call, Turn, decide, script_of

from lernie_ref.adapters import parse_script
from tests.support.model_talk import delivered

PROGRAMS = [
    "fix it\n@read_file src/a.py\n@cd src\n@bash make test && echo ok\n",
    "@apply_patch\n*** Begin Patch\n*** Update File: a.py\n@@ def f():\n-    return 1\n"
    "+    return 2\n*** End Patch\n@bash python3 -m unittest -q\nreport",
    "@apply_patch\n*** Begin Patch\n*** Delete File: x\n",  # no end line: to the end
    "@message bob hi\n@bash echo one\n@dispatch name=kid go\n@cd .\nlead",
    "@bash\n@cd\nplain text first",  # no argument: ordinary text
]


@pytest.mark.parametrize("body", PROGRAMS)
def test_the_kit_makes_the_reference_scripted_models_calls(body: str) -> None:
    assert [(name, dict(args)) for name, args in script_of(body).calls] == [
        (name, dict(args)) for name, args in parse_script(body).actions]


def test_an_envelope_is_one_call_and_not_the_answer_line() -> None:
    prompt = Turn("user", (delivered("@apply_patch\n*** Begin Patch\n*** Delete File: x\n"
                                     "*** End Patch\nreport the fix"),))
    first = decide([prompt])
    assert first.call == Call(
        "apply_patch", {"input": "*** Begin Patch\n*** Delete File: x\n*** End Patch\n"},
        "kit-1")
    done = decide([prompt, Turn("assistant", calls=1), Turn("tool")])
    assert done.text == "kit reply: report the fix"

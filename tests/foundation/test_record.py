"""The plain records of ``core/record.py`` behave as the ``dataclasses`` the checker sees
them as, for the subset the package uses (R-CLI-5)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lernie_ref.core.record import as_dict, field, record


@record(frozen=True)
class Point:
    x: int
    y: str
    z: int = 7


@record
class Bag:
    name: str
    items: list[int] = field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class PointDC:
    x: int
    y: str
    z: int = 7


def test_the_runtime_record_is_not_a_dataclass() -> None:
    assert not dataclasses.is_dataclass(Point)


@given(st.integers(), st.text(), st.integers(), st.integers(), st.text(), st.integers())
def test_a_frozen_record_compares_hashes_and_prints_as_a_dataclass(
    x: int, y: str, z: int, x2: int, y2: str, z2: int
) -> None:
    a, b = Point(x, y, z), Point(x2, y=y2, z=z2)
    a_dc, b_dc = PointDC(x, y, z), PointDC(x2, y=y2, z=z2)
    assert (a == b) == (a_dc == b_dc)
    assert hash(a) == hash(a_dc) and hash(b) == hash(b_dc)
    assert repr(a).replace("Point(", "PointDC(") == repr(a_dc)
    assert as_dict(a) == dataclasses.asdict(a_dc)
    assert Point(x, y) == Point(x, y, 7)


def test_a_frozen_record_refuses_assignment_and_a_plain_one_is_unhashable() -> None:
    p = Point(1, "a")
    with pytest.raises(AttributeError):
        p.x = 2  # type: ignore[misc]
    bag = Bag("b")
    bag.name = "c"
    with pytest.raises(TypeError):
        hash(bag)


def test_a_default_factory_makes_a_fresh_value_per_instance() -> None:
    one, two = Bag("a"), Bag("a")
    one.items.append(1)
    assert two.items == [] and one != two and Bag("a", [1]) == one


def test_wrong_arguments_are_type_errors() -> None:
    with pytest.raises(TypeError):
        Point(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, "a", 2, 3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, "a", x=2)  # type: ignore[misc]
    with pytest.raises(TypeError):
        Point(1, "a", w=2)  # type: ignore[call-arg]


def test_records_of_different_classes_are_never_equal() -> None:
    assert Point(1, "a") != PointDC(1, "a")  # type: ignore[comparison-overlap]

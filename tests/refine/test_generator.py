"""The situations the refinement machine's generator aims at, each played once by hand:
a conversation that goes back and forth (an ``answer`` is a message to whoever wrote
last), a scan while a child's driver is inside its model call, a writer whose mail
arrives while the agent's driver holds the lock, a driver killed in a quiet spell, two
messages at once racing for one number. Each refines the model on the unpatched code,
and the seeded bug it is there for makes the same program diverge."""

from __future__ import annotations

from pathlib import Path

import pytest
from lernie_stateful.refinement import CRASH_WINDOWS, Divergence, RealActor, World, last_writer
from lernie_stateful.seeded_bugs import BY_NAME

from lernie_ref.adapters import ModelRequest
from lernie_ref.core.entry import Entry
from lernie_ref.core.vocab import MESSAGES_DIR, Point

P, C = 0, 1


def _run_out(world: World, actor: RealActor) -> None:
    """Step ``actor`` until it has ended."""
    while actor.key in world.actors:
        world.step(actor)


def _entry(seq: int, origin: str, delivered: bool = True) -> Entry[str]:
    return Entry(seq, origin, delivered, f"{MESSAGES_DIR}/{seq:03d}-{origin}")


def test_an_answer_goes_to_whoever_wrote_last() -> None:
    """The newest delivered entry from another agent names the addressee; the user, the
    agent's own notes and model entries are passed over; with nobody, there is none."""
    me = "a-1"
    entries = [_entry(1, "a"), _entry(2, "b"), _entry(3, "user"), _entry(4, me),
               _entry(5, "choice", delivered=False)]
    assert last_writer(ModelRequest(me, entries, [])) == "b"
    assert last_writer(ModelRequest(me, [_entry(1, "user"), _entry(2, me)], [])) is None


def _conversation(world: World) -> None:
    """P dispatches C; C answers whoever wrote to it last (P, by its goal), then answers
    P: P's reply goes back to C, a reply to a reply that asks C for nothing."""
    world.script(P, "dispatch")
    world.script(C, "answer")
    world.operator_message(P)
    world.run_all()


def test_r_debt_4_a_reply_to_a_reply_owes_nothing(tmp_path: Path) -> None:
    world = World(tmp_path)
    _conversation(world)
    assert world.stranded() == []
    c = world.real_view()[C]
    assert c.answered and not c.owed_at_answer and c.last_prompter == P
    cid = world.ids[C] or ""
    results_from_c = [n for n in (world.ws.worktree(world.ids[P] or "") / MESSAGES_DIR)
                      .iterdir() if n.name.endswith(f"-{cid}.md")
                      and "epitaph: final-response" in n.read_text()]
    assert len(results_from_c) == 1  # C's answer to P's reply sent nothing


def test_r_debt_4_without_the_debt_the_conversation_diverges(tmp_path: Path) -> None:
    with BY_NAME["no-reply-debt"].apply(), pytest.raises(Divergence) as err:
        _conversation(World(tmp_path))
    assert "deposit" in str(err.value).splitlines()[0]


def _scan_during_childs_call(world: World) -> None:
    """P dispatches C and answers; C's driver runs into its model call (the warrant) and
    holds its lock there while `lernie scan` runs."""
    world.script(P, "dispatch")
    writer = world.operator_message(P)
    _run_out(world, writer)
    parent = world.start_launch(0)
    assert parent is not None
    _run_out(world, parent)
    child = world.start_launch(0)
    assert child is not None and child.agent == C
    while (p := world.step(child)) is not None and p.name != Point.HOP_WARRANT:
        pass
    assert p is not None
    world.scan()


def test_r_scan_6_a_scan_leaves_a_child_in_its_model_call_alone(tmp_path: Path) -> None:
    world = World(tmp_path)
    _scan_during_childs_call(world)
    assert world.real_view()[P].inbox == ()  # no `died` for a child at work
    world.run_all()
    assert world.stranded() == []


def test_r_scan_6_a_sweep_that_ignores_the_lock_diverges(tmp_path: Path) -> None:
    with BY_NAME["sweep-ignores-lock"].apply(), pytest.raises(Divergence) as err:
        _scan_during_childs_call(World(tmp_path))
    assert "lernie scan" in str(err.value).splitlines()[0]


def _mail_while_driven(world: World) -> None:
    """`lernie prompt` P, which answers and rests; `lernie message` P launches a driver,
    which holds its lock in its model call while a second `lernie message` P runs
    through (its probe finds the lock busy: the driver's release owes it a launch)."""
    world.operator_message(P)
    world.run_all()
    note = world.operator_message(P)
    _run_out(world, note)
    driver = world.start_launch(0)
    assert driver is not None
    while (p := world.step(driver)) is not None and p.name != Point.HOP_WARRANT:
        pass
    late = world.operator_message(P)
    _run_out(world, late)
    assert world.real_view()[P].pending_launches == 0  # the probe found the lock busy


def test_r_rel_1_mail_that_found_the_driver_busy_is_launched_at_its_release(
        tmp_path: Path) -> None:
    world = World(tmp_path)
    _mail_while_driven(world)
    world.run_all()
    assert world.stranded() == []
    assert world.real_view()[P].inbox == ()


def test_r_rel_1_without_the_release_rule_the_same_program_diverges(tmp_path: Path) -> None:
    with BY_NAME["no-release-rule"].apply(), pytest.raises(Divergence):
        world = World(tmp_path)
        _mail_while_driven(world)
        world.run_all()


def _cascade_stop_after_a_tool_result(world: World, land_alike: bool) -> None:
    """P's driver has committed its dispatch's tool result (C exists and is launched);
    C's driver is at its model call's stop check; `lernie stop P` cascades to both."""
    world.script(P, "dispatch")
    writer = world.operator_message(P)
    _run_out(world, writer)
    parent = world.start_launch(0)
    assert parent is not None
    while (p := world.step(parent)) is None or not (
            p.name == Point.TRANSCRIPT_COMMITTED and p.detail.endswith("-tool.json")):
        pass
    child = world.start_launch(0)
    assert child is not None and child.agent == C
    while (p := world.step(child)) is not None and p.name != Point.HOP_WARRANT:
        pass
    if land_alike:
        world.past_tool_results()
    assert P in world.stoppable()
    world.stop(P)
    world.run_all()


def test_r_stop_3_a_cascaded_stop_lands_where_model_and_code_read_it_alike(
        tmp_path: Path) -> None:
    """The machine runs P's driver past the stop check after its tools before the stop
    lands; then both drivers stop at their next check, as the model has it."""
    world = World(tmp_path)
    _cascade_stop_after_a_tool_result(world, land_alike=True)
    assert world.stranded() == []
    assert world.real_view()[P].parked_at_tip and world.real_view()[C].parked_at_tip


def test_r_step_4_the_stop_check_after_a_tool_result_is_not_in_the_model(
        tmp_path: Path) -> None:
    """Why the machine does so: landed right after P's tool result, the stop is read by
    the code's check after the tools (P stops without a successor), while the model's P
    has already become its successor hop and reads it at the next model call."""
    with pytest.raises(Divergence) as err:
        _cascade_stop_after_a_tool_result(World(tmp_path), land_alike=False)
    assert "terminal.stopped-marked" in str(err.value).splitlines()[0]


def _killed_in_a_quiet_spell(world: World, at: str) -> None:
    """`lernie prompt` P, whose model calls `patch-add`; the quiet spell that runs
    everyone to the end (the machine's ``settle_killing_one``) kills P's driver the
    first time a driver passes ``at``; then `lernie scan` and everyone to the end again,
    as the machine's teardown does after a crash."""
    world.script(P, "noop", tool="patch-add")
    world.operator_message(P)
    world.run_all(kill=(at, 0))
    assert [a.points[-1].name for a in world.graveyard] == [at]
    world.scan()
    world.run_all()


@pytest.mark.parametrize("at", [Point.HOP_ASSISTANT_COMMITTED, Point.HOP_TOOL_RAN])
def test_r_step_2_a_driver_killed_in_a_tool_window_of_a_quiet_spell_is_settled(
        tmp_path: Path, at: str) -> None:
    world = World(tmp_path)
    _killed_in_a_quiet_spell(world, at)
    assert world.stranded() == []
    assert world.real_view()[P].window == "closed"


def test_r_step_2_a_tool_window_never_settled_diverges(tmp_path: Path) -> None:
    with BY_NAME["no-crash-settlement"].apply(), pytest.raises(Divergence):
        world = World(tmp_path)
        _killed_in_a_quiet_spell(world, Point.HOP_TOOL_RAN)
        if world.stranded():  # the teardown's verdict on the same run
            raise Divergence("; ".join(world.stranded()))


def test_r_drain_2_a_stray_of_a_quiet_spell_is_committed_by_the_next_holder(
        tmp_path: Path) -> None:
    world = World(tmp_path)
    _killed_in_a_quiet_spell(world, Point.TRANSCRIPT_RENAMED)
    assert world.stranded() == []
    assert world.real_view()[P].uncommitted == ()


def test_r_drain_2_without_stray_recovery_the_same_spell_diverges(tmp_path: Path) -> None:
    with BY_NAME["no-stray-recovery"].apply(), pytest.raises(Divergence):
        world = World(tmp_path)
        _killed_in_a_quiet_spell(world, Point.TRANSCRIPT_RENAMED)
        if world.stranded():
            raise Divergence("; ".join(world.stranded()))


def _two_at_once(world: World) -> tuple[RealActor, ...]:
    """`lernie prompt` P, run to its end; then two `lernie message` P at once, both past
    their listing of P's inbox (the machine's ``operator_messages``, drawn "a second at
    once"), and everyone to the end."""
    world.operator_message(P)
    world.run_all()
    writers = world.messages_at_once(P)
    world.run_all()
    return writers


def test_r_dep_6_two_messages_at_once_list_one_number_and_the_second_takes_the_next(
        tmp_path: Path) -> None:
    world = World(tmp_path)
    first, second = _two_at_once(world)
    listed = [next(p.detail for p in w.points if p.name == Point.DEPOSIT_LISTED)
              for w in (first, second)]
    published = [next(p.detail for p in w.points if p.name == Point.DEPOSIT_PUBLISHED)
                 for w in (first, second)]
    assert listed[0] == listed[1]  # the race: one number for both
    assert len(set(published)) == 2  # neither replaced the other
    assert [p.name for w in (first, second) for p in w.points].count(
        Point.DEPOSIT_COLLIDED) == 1
    assert world.stranded() == []


def test_r_dep_6_a_publication_that_replaces_the_other_diverges(tmp_path: Path) -> None:
    with BY_NAME["overwriting-deposit"].apply(), pytest.raises(Divergence):
        _two_at_once(World(tmp_path))


def _crash_windows_passed(world: World) -> list[str]:
    """The crash windows drivers passed, in the order the world ran them (its trace)."""
    rows = [row.split() for row in world.trace if ":driver[" in row]
    return [row[1] for row in rows if len(row) > 1 and row[1] in CRASH_WINDOWS]


@pytest.mark.parametrize("nth", [0, 2, 5])
def test_a_quiet_spell_kill_at_its_nth_crash_window_lands_in_whichever_window_that_is(
        tmp_path: Path, nth: int) -> None:
    """``settle_killing_one`` drawn as "the spell's n-th crash window": the driver killed
    is the one that passes the n-th crash window of the spell, whichever window it is (the
    same spell run without a kill passes them in the same order: the world is
    deterministic)."""
    def spell(world: World, kill: tuple[tuple[str, ...], int] | None) -> None:
        world.script(P, "noop", tool="patch-add")
        world.script(P, "dispatch")
        world.operator_message(P)
        world.run_all(kill=kill)

    calm = World(tmp_path / "calm")
    spell(calm, None)
    windows = _crash_windows_passed(calm)
    assert len(windows) > nth and calm.graveyard == []
    killed = World(tmp_path / "killed")
    spell(killed, (CRASH_WINDOWS, nth))
    assert [a.points[-1].name for a in killed.graveyard] == [windows[nth]]
    assert _crash_windows_passed(killed) == windows[:nth + 1]

"""The verifier's own mutation score: small bugs planted in a scratch copy of the model.

Each mutant is a named, described source edit of `lernie_spec/model.py`. To
run one, the whole `lernie_spec` package is copied to a temporary directory
under another package name, the edit is applied to that copy (the original is
never touched, and the model has no flag for any of this), the copy is
imported, and the default worlds are explored under the reference profile
until the first violation. A mutant is *killed* when some invariant fails,
*equivalent* when it is listed with a written reason why no behaviour changes
(it is still run, and reported as killed if it is caught), and *survived*
otherwise. `lernie-check mutants` prints the table and exits 1 on a survivor.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import NamedTuple

from lernie_spec import cliopts
from lernie_spec.cliopts import Progress


class Mutant(NamedTuple):
    name: str
    summary: str
    old: str  # occurs exactly once in model.py
    new: str
    equivalent: str = ""  # why no behaviour changes, for an equivalent mutant
    kills: str = ""  # a hole of the verifier: "I-n:L@world", what kills it, in how many steps


M = Mutant
CATALOGUE: tuple[Mutant, ...] = (
    M("tool-step-closes-debt-window", "a tool result ends the debt window (R-DEBT-2)",
      "ag0 = agent_with(st.agents[a], window=Window.CLOSED, call_due=True)\n",
      "ag0 = agent_with(st.agents[a], window=Window.CLOSED, call_due=True,"
      " asked_since_answer=False)\n"),
    M("tool-result-asks", "a tool result asks for a reply (R-DEBT-3)",
      "ag0 = agent_with(st.agents[a], window=Window.CLOSED, call_due=True)\n",
      "ag0 = agent_with(st.agents[a], window=Window.CLOSED, call_due=True,"
      " asked_since_answer=True)\n"),
    M("results-count-as-last-prompter", "a delivered result becomes the last prompter (R-ADDR-2)",
      "last_prompter=d.sender if plain and d.sender != a else",
      "last_prompter=d.sender if d.sender != a else"),
    M("foreign-reply-asks", "a foreign reply asks for a reply (R-DEBT-3)",
      "asks = d.sender != a and (plain or (d.sender >= 0 and scope.parents[d.sender] == a))",
      "asks = d.sender != a"),
    M("own-child-result-asks-nothing", "an own child's result does not ask (R-DEBT-3)",
      "asks = d.sender != a and (plain or (d.sender >= 0 and scope.parents[d.sender] == a))",
      "asks = d.sender != a and plain"),
    M("never-in-debt-once-answered", "an agent that answered never owes again (R-DEBT-4)",
      "owed_at_answer=(not ag.answered) or ag.asked_since_answer,",
      "owed_at_answer=not ag.answered,"),
    M("always-in-debt", "every final response is owed (no reply debt, R-DEBT-4)",
      "if prof.reply_debt and not ag.owed_at_answer:", "if False:"),
    M("reply-to-parent", "a final response goes to parent_of (R-ADDR-3)",
      "return parent_of(scope, a) if ag.last_prompter == NOBODY else ag.last_prompter",
      "return parent_of(scope, a)"),
    M("executor-result-keeps-mark", "an executor's result does not move the returned mark",
      "        author = author if split else _marked(author)\n",
      "        author = author\n"),
    M("sweep-result-keeps-mark", "the sweep's deposit does not move the returned mark (I-15)",
      "author = _marked(agent_with(agents[c], published_at_tip=True))",
      "author = agent_with(agents[c], published_at_tip=True)"),
    M("commit-keeps-returned-mark", "a commit leaves the returned mark 'at the tip'",
      "ag = agent_with(ag, returned_at_tip=False, parked_at_tip=False, revivals=0,",
      "ag = agent_with(ag, parked_at_tip=False, revivals=0,"),
    M("stop-mark-not-set", "a stopped/budget event sets no mark (folded into returned)",
      "ag = agent_with(ag, parked_at_tip=True)",
      "ag = agent_with(ag, parked_at_tip=False)"),
    M("parking-reported-twice", "a stop or budget event at a tip already reported sends its "
      "obituary again (R-TERM-7)",
      "repeated = ag.parked_at_tip and ag.returned_at_tip", "repeated = False"),
    M("release-rule-ignores-parked", "the release rule launches for parked obituaries (R-REL-2)",
      "if (f.sender, f.n) not in seen and warrants(f)]", "if (f.sender, f.n) not in seen]"),
    M("no-release-rule", "a release never re-reads the inbox (R-REL-1)",
      "pc=Pc.REREAD_INBOX if prof.release_rule", "pc=Pc.REREAD_INBOX if False"),
    M("crash-keeps-lock", "a crashed driver's lock stays held",
      "s = _put(st, i, None, agents=_noted_death(st.agents, st.procs[i]),",
      "s = _put(st, i, None, agents=_noted_death(_set_agent(st, st.procs[i].agent,"
      " agent_with(st.agents[st.procs[i].agent], forked_holder=True)) if st.procs[i].lease"
      " else st.agents, st.procs[i]),"),
    M("settlement-leaves-nothing-due", "crash settlement leaves the warrant at NothingDue",
      "ag = agent_with(st.agents[p.agent], window=Window.CLOSED, call_due=True)",
      "ag = agent_with(st.agents[p.agent], window=Window.CLOSED, call_due=False)"),
    M("final-deposited-uncommitted", "the final response is deposited before (without) "
      "its commit (step order)",
      "    ag2 = _terminal(ag, renamed_only=split)\n"
      "    s = state_with(st, agents=_set_agent(st, a, ag2))",
      "    ag2 = _terminal(ag, renamed_only=split)\n    s = st"),
    M("revival-wakes-parent", "the revival probes parent_of instead of the recipient",
      "p = proc_with(st.procs[i], target=st.procs[i].recipient)",
      "p = proc_with(st.procs[i], target=parent_of(scope, st.procs[i].agent))"),
    M("lost-reply-not-resent", "the sweep never re-sends a lost reply (R-SCAN-9)",
      "elif ag.answered and not mid_work:", "elif False:"),
    M("flush-launches-without-mail", "the flush launches agents with no mail (unfunded)",
      "if ag.exists and ag.inbox and not locked(st, a):", "if ag.exists and not locked(st, a):"),
    M("revival-then-self-launch-again", "after the revival the exit self-launches again",
      "return probe_release_launch(st, prof, scope, i, Pc.DONE, Funding.REVIVAL)",
      "return probe_release_launch(st, prof, scope, i, Pc.SELF_LAUNCH, Funding.REVIVAL)"),
    M("budget-exhausted-wakes-parent", "a budget-exhausted exit probes its parent (pin 2)",
      "wake = p.epitaph == FINAL or (", "wake = p.epitaph in (FINAL, BUDGET) or ("),
    M("writer-never-probes", "`lernie message` deposits and never probes (R-PROBE-2)",
      "_sub(deposit_publish, Pc.PROBE_RECIPIENT)", "_sub(deposit_publish, Pc.DONE)"),
    M("drain-results-first", "own-child results are delivered before plain mail (R-DRAIN-4)",
      "q = tuple(plain + res)", "q = tuple(res + plain)"),
    M("no-stray-recovery", "the hop does not commit strays first (R-DRAIN-2)",
      "if (ag.uncommitted or ag.stray_final or ag.stray_step) and prof.stray_recovery:",
      "if False:"),
    M("baton-drops-lease", "the tool result's successor hop runs without the lease (R-LOCK-3)",
      'q = proc_with(p, tool="", target=NOBODY, sender=NOBODY, number=0)',
      'q = proc_with(p, tool="", target=NOBODY, sender=NOBODY, number=0, lease=False)'),
    M("busy-probe-holds", "a probe that reads busy takes the lock anyway",
      "q = proc_with(p, pc=busy, history=_ph(",
      "q = proc_with(p, pc=nxt, probe_on=p.target, history=_ph("),
    M("sweep-ignores-lock", "the sweep judges agents that are being driven (R-SCAN-6)",
      "if not ag.exists or locked(st, c):\n            continue\n        if prof.scan_revival",
      "if not ag.exists:\n            continue\n        if prof.scan_revival"),
    M("sweep-died-with-mail", "the sweep reports a death with mail pending (R-SCAN-4 a)",
      "if mid_work and not ag.inbox and not ag.parked_at_tip:",
      "if mid_work and not ag.parked_at_tip:"),
    M("obituary-to-self", "an obituary is deposited into the agent's own inbox (R-ADDR-1)",
      "r = NOBODY if repeated else parent_of(scope, p.agent)  # R-ADDR-1",
      "r = NOBODY if repeated else p.agent"),
    M("rename-replaces", "publication replaces a same-named file (D-1)",
      "    if prof.create_only:\n        n = _free(ag, p.sender)",
      "    if False:\n        n = _free(ag, p.sender)"),
    M("commit-forgets-deposit", "a commit does not account for its delivered deposit (I-5)",
      "in_flight=_flight_remove(st.in_flight, d))", "in_flight=st.in_flight)"),
    M("settle-before-strays", "the hop settles a crashed window before it recovers strays",
      "    if (ag.uncommitted or ag.stray_final or ag.stray_step) and prof.stray_recovery:\n"
      "        return proc_with(p, pc=Pc.RECOVER_STRAYS)\n"
      "    if ag.window is Window.OPEN and prof.crash_settlement:\n"
      "        return proc_with(p, pc=Pc.SETTLE_WINDOW)\n",
      "    if ag.window is Window.OPEN and prof.crash_settlement:\n"
      "        return proc_with(p, pc=Pc.SETTLE_WINDOW)\n"
      "    if (ag.uncommitted or ag.stray_final or ag.stray_step) and prof.stray_recovery:\n"
      "        return proc_with(p, pc=Pc.RECOVER_STRAYS)\n"),
    M("revival-skips-terminal-stray", "the scan does not relaunch an agent whose terminal "
      "entry was left uncommitted (R-SCAN-10, R-DRAIN-8)",
      "    if ag.stray_final:\n        return True\n    if ag.parked_at_tip:",
      "    if ag.stray_final:\n        return False\n    if ag.parked_at_tip:"),
    M("revival-ignores-stop-mark", "the scan relaunches an agent stopped at its tip "
      "(R-SCAN-4 b, R-SCAN-10)",
      "    if ag.parked_at_tip:\n        return False\n",
      "    if False:\n        return False\n"),
    M("revival-ignores-mail", "the scan also relaunches an agent with pending mail (the "
      "flush's case: two launches, R-SCAN-10)",
      "if prof.scan_revival and not ag.inbox and revival_due(ag):",
      "if prof.scan_revival and revival_due(ag):"),
    M("unpaired-not-declined", "a buried tool window is not declined (R-STEP-3)",
      "if ag.window is Window.BURIED or (", "if False or (",
      equivalent="the edit only changes what `_warrant` does with a BURIED window, and no "
      "reachable state has one: a window becomes BURIED only when `drain_move` delivers "
      "into an OPEN one, a drain starts only from `_hop_start`, which sends an OPEN window "
      "to the settlement first (R-STEP-2; the reference settles in every profile but "
      "bl-b98d's), and within a hop only the driver itself opens a window, closing it (tool "
      "result, stop) before its next drain. So every state, step and trace is the same: "
      "no observable outcome changes"),
    M("sweep-ignores-missing-parent", "the sweep deposits for a parent with no branch",
      "if par == NOBODY or not agents[par].exists:", "if par == NOBODY:",
      equivalent="the edit changes the sweep only for an existing agent whose parent does "
      "not exist, and no reachable state has one: every default world starts with each "
      "existing agent's parent existing (roots have none), a child comes into existence "
      "only through its parent's dispatch (`deposit_list`, R-PROBE-6), and no step ever "
      "sets `exists` back to False. So the sweep's deposits, and every state after it, are "
      "the same: no observable outcome changes"),
    M("message-to-missing-agent", "`lernie message` deposits for an agent with no branch "
      "(R-ID-4)",
      "if ag.exists and n <= scope.max_seq", "if n <= scope.max_seq"),
    M("probe-keeps-the-lock", "a writer's probe launches and keeps holding the lock "
      "(R-PROBE-3)",
      "q = proc_with(p, pc=nxt, probe_on=NOBODY, history=_ph(",
      "q = proc_with(p, pc=nxt, history=_ph("),
    # ---- the verifier's holes (issue: at most once, faults, symmetry, ghost, musts) ----
    M("no-stop-cascade", "`lernie stop` does not reach descendants (R-STOP-3)",
      "            targets = tree\n", "            targets = {a}\n", kills="I-22:10@faults"),
    M("stop-cascade-children-only", "`lernie stop` reaches direct children, not "
      "grandchildren (R-STOP-3)",
      "            targets = tree\n",
      "            targets = {a} | {c for c in tree if scope.parents[c] == a}\n",
      kills="I-22:10@stop-tree"),
    M("hop-resends-answered-reply", "a successor hop re-deposits a final response already "
      "sent (R-DRAIN-8 ignores the returned mark)",
      "if (ag.returned_at_tip or ag.published_at_tip or not ag.answered or ag.call_due",
      "if (not ag.answered or ag.call_due", kills="I-12:27@exchange"),
    M("sweep-resends-delivered-reply", "the sweep re-sends a reply whose mark a kill left "
      "behind (R-SCAN-9 ignores the result on disk)",
      "if ag.returned_at_tip or ag.published_at_tip or ag.stray_final:",
      "if ag.returned_at_tip or ag.stray_final:", kills="I-12:23@siblings"),
    M("lost-reply-never-wakes", "the hop's re-send of a lost reply deposits it and never "
      "probes the recipient (R-DRAIN-8, after a crash)",
      'Instruction(Pc.LOST_PROBE, lost_probe, "R-PROBE-1")',
      'Instruction(Pc.LOST_PROBE, lambda st, prof, scope, i: _drain_next([(Step("R-PROBE-1",'
      ' i, "lost reply: no probe", Action.PROBE), _put(st, i, proc_with(st.procs[i], '
      'pc=Pc.LIST_INBOX)))], i), "R-PROBE-1")', kills="I-21:29@dispatch"),
    M("sweep-ignores-later-drivers", "the sweep sees only the processes started before the "
      "scan (process order)",
      "if not ag.exists or locked(st, c):\n            continue\n        if prof.scan_revival",
      "if not ag.exists or any((p.lease and p.agent == c) or p.probe_on == c"
      " for p in st.procs[:i]):\n            continue\n        if prof.scan_revival",
      kills="I-8:9@faults"),
    M("guard-never-resets", "the crash-loop guard counts revivals across commits "
      "(R-SCAN-10)",
      "ag = agent_with(ag, returned_at_tip=False, parked_at_tip=False, revivals=0,",
      "ag = agent_with(ag, returned_at_tip=False, parked_at_tip=False,",
      kills="I-20:21@crash-loop"),
    M("guard-never-fires", "the scan revives an agent after three revivals at one tip "
      "(R-SCAN-10)",
      "if ag.revivals < REVIVE_LIMIT:", "if True:", kills="I-8:18@crash-loop"),
    M("self-launch-skipped-for-parked-obituary", "no exit self-launch while a parked "
      "obituary waits (R-TERM-2 (4))",
      "    nxt = Pc.REVIVAL_PROBE if p.recipient != NOBODY and prof.revival else Pc.DONE\n"
      "    s = state_with(st, agents=_launch(st, scope, p.agent))\n",
      "    nxt = Pc.REVIVAL_PROBE if p.recipient != NOBODY and prof.revival else Pc.DONE\n"
      "    if any(f.kind in PARKED for f in st.agents[p.agent].inbox):\n"
      "        return [(Step(\"R-TERM-2\", i, \"self-launch skipped\", Action.SELF_LAUNCH),"
      " _put(st, i, proc_with(p, pc=nxt, target=p.recipient)))]\n"
      "    s = state_with(st, agents=_launch(st, scope, p.agent))\n", kills="I-21:25@faults"),
    M("flush-launches-busy", "the flush launches an agent whose probe reads busy (R-SCAN-2)",
      "if ag.exists and ag.inbox and not locked(st, a):", "if ag.exists and ag.inbox:",
      kills="I-8:6@faults"),
    M("no-mark-repair-by-sweep", "the sweep leaves a returned mark behind (R-SCAN-11)",
      "            agents = (*agents[:c], _marked(agents[c]), *agents[c + 1:])\n",
      "            pass\n", kills="I-14:14@faults"),
    M("no-mark-repair-by-hop", "a hop moves the tip past a returned mark left behind "
      "(R-SCAN-11)",
      "    if ag.published_at_tip and not ag.returned_at_tip:\n        # R-SCAN-11: a",
      "    if False:\n        # R-SCAN-11: a", kills="I-14:18@faults"),
)

# The holes of the verifier each of these shows closed: a mutant the checker once let
# through (or could not express), now killed by the invariant named in `kills`.
HOLES: tuple[str, ...] = tuple(m.name for m in CATALOGUE if m.kills)


# The blind spots the catalogue was first written for: oracles that trusted the
# fields they judge (debt window, asking results, last prompter), the returned
# mark, funded launches, recovery after a crash, step order, the revival's
# address, the stop/budget mark and the lost reply. The test suite runs these
# by default (each must be killed); the whole catalogue runs under `slow`
# and as `lernie-check mutants`.
BLIND_SPOTS: tuple[str, ...] = (
    "tool-step-closes-debt-window",
    "tool-result-asks",
    "results-count-as-last-prompter",
    "executor-result-keeps-mark",
    "release-rule-ignores-parked",
    "revival-then-self-launch-again",
    "crash-keeps-lock",
    "settlement-leaves-nothing-due",
    "final-deposited-uncommitted",
    "revival-wakes-parent",
    "stop-mark-not-set",
    "lost-reply-not-resent",
)


class Outcome(NamedTuple):
    mutant: Mutant
    caught: str  # "I-n" or ""
    world: str
    length: int
    seconds: float

    @property
    def verdict(self) -> str:
        if self.caught:
            return "killed"
        return "equivalent" if self.mutant.equivalent else "SURVIVED"


def apply(m: Mutant, source: str) -> str:
    if source.count(m.old) != 1:
        raise ValueError(f"mutant {m.name}: the edit's anchor occurs {source.count(m.old)} times")
    return source.replace(m.old, m.new)


def run_one(m: Mutant, worlds: tuple[str, ...] = (), invariant: str = "",
            **explore_kw: bool) -> Outcome:
    """Explore the default worlds (or the named ones among them) with a scratch
    copy of the model carrying m, until the first violation (or, with `invariant`,
    until that invariant's; `explore_kw` are further options of `explore`)."""
    import lernie_spec

    src = Path(lernie_spec.__file__).parent
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        pkg = "lernie_spec_" + m.name.replace("-", "_")
        dst = Path(tmp) / pkg
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        for f in dst.glob("*.py"):
            text = f.read_text(encoding="utf-8").replace("lernie_spec.", pkg + ".")
            if f.name == "model.py":
                text = apply(m, text)
            f.write_text(text, encoding="utf-8")
        sys.path.insert(0, tmp)
        try:
            explore_mod = importlib.import_module(pkg + ".explore")
            variants = importlib.import_module(pkg + ".variants")
            model = importlib.import_module(pkg + ".model")
            for ns in variants.DEFAULT:
                if worlds and ns.name not in worlds:
                    continue
                if invariant:
                    r = explore_mod.explore(model.Profile(), ns.scope,
                                            want=frozenset({invariant}), **explore_kw)
                    found = {k: v for k, v in r.violations.items() if k == invariant}
                else:
                    r = explore_mod.explore(model.Profile(), ns.scope, first=True, **explore_kw)
                    found = r.violations
                if found:
                    inv, vio = min(found.items(), key=lambda kv: len(kv[1].trace))
                    return Outcome(m, inv, ns.name, len(vio.trace), time.perf_counter() - t0)
        finally:
            sys.path.remove(tmp)
            for name in [k for k in sys.modules if k == pkg or k.startswith(pkg + ".")]:
                del sys.modules[name]
    return Outcome(m, "", "", 0, time.perf_counter() - t0)


def run_all(catalogue: tuple[Mutant, ...] = CATALOGUE, workers: int = 2,
            progress: Progress | None = None) -> list[Outcome]:
    """Every mutant, in catalogue order; `progress` counts the mutants run and killed."""
    done: dict[str, Outcome] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_one, m): m for m in catalogue}
        if progress is not None:  # after the workers started: none is forked with its thread
            progress.update(f"0/{len(catalogue)} mutants run ({workers} workers)", force=True)
        for f in as_completed(futures):
            o = f.result()
            done[o.mutant.name] = o
            if progress is not None:
                killed = sum(1 for x in done.values() if x.caught)
                progress.update(f"{len(done)}/{len(catalogue)} mutants run, {killed} killed, "
                                f"{sum(1 for x in done.values() if x.verdict == 'SURVIVED')} "
                                "survived", force=True)
    return [done[m.name] for m in catalogue]


def table(outs: list[Outcome]) -> str:
    rows = []
    for o in outs:
        if o.caught:
            what = f"caught by {o.caught} in {o.world}, {o.length}-step trace, {o.seconds:.1f}s"
        elif o.mutant.equivalent:
            what = f"equivalent: {o.mutant.equivalent} ({o.seconds:.1f}s)"
        else:
            what = f"SURVIVED the default worlds ({o.seconds:.1f}s)"
        rows.append((o.mutant.name, o.mutant.summary, what))
    w0 = max(len("mutant"), *(len(r[0]) for r in rows))
    w1 = max(len("what it breaks"), *(len(r[1]) for r in rows))
    lines = [f"{'mutant':{w0}}  {'what it breaks':{w1}}  verdict",
             f"{'-' * w0}  {'-' * w1}  -------"]
    lines += [f"{a:{w0}}  {b:{w1}}  {c}" for a, b, c in rows]
    k = sum(1 for o in outs if o.caught)
    e = sum(1 for o in outs if not o.caught and o.mutant.equivalent)
    s = sum(1 for o in outs if o.verdict == "SURVIVED")
    lines.append("")
    lines.append(f"mutants: {k} killed, {e} equivalent, {s} survived of {len(outs)}")
    return "\n".join(lines)


def build_parser(prog: str = "lernie-check mutants") -> argparse.ArgumentParser:
    ap = cliopts.parser(prog, __doc__ or "")
    ap.add_argument("names", nargs="*", metavar="MUTANT",
                    help="run only these mutants (default: the whole catalogue; see --list)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--jobs", type=int, default=2, metavar="N",
                    help="worker processes, one mutant each at a time")
    cliopts.add_common(ap)
    return ap


def main(argv: list[str]) -> int:
    """`lernie-check mutants [MUTANT ...]`."""
    ns = build_parser().parse_args(argv)
    if ns.list:
        for m in CATALOGUE:
            print(f"{m.name:44} {m.summary}" + ("  (equivalent)" if m.equivalent else ""))
        return 0
    names = set(ns.names)
    unknown = names - {m.name for m in CATALOGUE}
    if unknown:
        print(f"lernie-check mutants: unknown mutant {sorted(unknown)[0]!r}", file=sys.stderr)
        return 2
    cat = tuple(m for m in CATALOGUE if not names or m.name in names)
    progress = Progress.of("lernie-check mutants", ns.quiet, ns.verbose)
    try:
        outs = run_all(cat, max(1, ns.jobs), progress)
    finally:
        progress.done()
    wall, cpu = progress.times()
    bad = any(o.verdict == "SURVIVED" for o in outs)
    if ns.json:
        print(json.dumps({
            "ok": not bad, "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "mutants": [{"mutant": o.mutant.name, "summary": o.mutant.summary,
                         "verdict": o.verdict, "caught_by": o.caught or None,
                         "world": o.world or None, "trace_length": o.length,
                         "seconds": round(o.seconds, 3),
                         "equivalent": o.mutant.equivalent or None} for o in outs],
        }, indent=2))
    else:
        text, _, verdict = table(outs).rpartition("\n")
        print(text)
        print(cliopts.timing(wall, cpu, max(1, ns.jobs)) + " (each mutant's seconds: the "
              "wall time of its worker)")
        print(verdict)
    return 1 if bad else 0

"""The loop engine: up to N agents at once, each in a slot; a serial run is the engine
with one slot.

Where the agents run is the ``Place`` it is given (``places``): the main checkout
(one slot), or each item's own linked worktree (``--parallel N``). Everything
else is here once, for both:

* **Selection** is the serial rule (``select_next``): a pending item whose
  dependencies are all done; an item whose work is being landed counts as not
  done yet, so a dependent item starts on a tip that holds it. An item's retries
  come first, in the same place.
* **Each start** takes the item (in progress, journaled, told) and starts its agent
  where the place puts it (``iteration.start_agent``). The place may prepare, beside
  the loop, where the items that start next will run: those about to fill the free
  slots, and those that fill them when the running agents end.
* **Watching**: one look at every running agent at a time — its output read (and
  followed), its idle time (``--idle-timeout``), its end.
* **An ended attempt** (``agent_run.after_attempt``): its receipt added up, a usage
  limit waited out (no agent starts meanwhile; the item reruns without the attempt
  counting), the circuit breaker fed; then its signal settled (``outcomes``: done,
  blocked, needs-human, retried, deferred). The git work is the place's, at once
  or on its merge thread; what it came to is acted on as it comes (``events``).
* **The branch**: the run commits only to the branch it started on. A commit on
  it meanwhile (the user's) is the new tip; a main checkout switched to another
  branch (or a detached HEAD) stops the run at once — agents ended, nothing
  committed, the agents' work kept — with the command to go on.
* **Ending**: nothing more to start and nothing running (the session ends the run),
  a stop request (``loop stop``, a signal), a pause for a human
  (``--pause-on-needs-human``: the running agents finish first), the circuit
  breaker, a usage limit no wait lifts or ``--on-limit stop`` (the run ends now),
  ``--max-cost`` (the running agents finish, nothing more starts). Each running
  item goes back to pending; the place records what is left to record.
* **Between attempts**: an item that runs again starts on a clean tree unless its
  agent's session is resumed (``outcomes.again``); a run that ends while an item is
  between its attempts — or at the attempt that ended it — keeps that attempt's
  changes as the item's abandoned work (``Place.clear``), so no ending leaves an
  ended agent's work in the tree for nobody.
"""

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from git_forge.backlog.item import Item
from git_forge.backlog.model import select_next
from git_forge.errors import ForgeError
from git_forge.exit_codes import LOOP_PAUSED, LOOP_STOPPED
from git_forge.gates.verdict import describe_baseline
from git_forge.loop import agent_run, notify, outcomes, receipts
from git_forge.loop.agent_run import Ending, Step
from git_forge.loop.attempt import Attempt
from git_forge.loop.context import RunContext, left_branch
from git_forge.loop.errors import BranchLeft
from git_forge.loop.iteration import AgentResult, agent_result, remove_prompt_files, start_agent
from git_forge.loop.outcomes import Outcome
from git_forge.loop.places import (
    Escaped,
    Event,
    Landed,
    Note,
    NotLanded,
    Place,
    Unavailable,
)
from git_forge.loop.progress import RunningAgent
from git_forge.loop.summary import LoopResult, RunCostsJSON, loop_result
from git_forge.loop.verify import (
    Gate,
    count_check,
    judged,
    run_baseline,
    start_gate,
)
from git_forge.supervisor.follow import LineFollower
from git_forge.supervisor.lifecycle import ProcessError
from git_forge.supervisor.manifest import Manifest
from git_forge.tree.errors import GitError
from git_forge.tree.git_status import ListingMeanwhile
from git_forge.tree.porcelain import StatusEntry

#: How long one look at the running agents waits for the first of them to end.
POLL_SECONDS = 0.05


class CancelledFields(TypedDict, total=False):
    """``loop_cancelled``'s fields beside the item (events.md)."""

    reason: str
    running: list[str]


@dataclass
class _Agent:
    """One running agent: its item, process, where it runs and how far it was read."""

    item: Item
    handle: str
    tree: Path | None
    started: float
    #: Reads the agent's stream (its receipt; a structured agent's final text).
    attempt: Attempt
    #: Its output's lines for ``--follow`` (a generic agent's; made at the first look).
    follower: LineFollower | None = None
    output_bytes: int = 0
    #: When its output last grew (``--idle-timeout``), and whether that ended it.
    heard_at: float = 0.0
    idle: bool = False
    #: Its process tree has ended (its end is being recorded).
    tree_ended: bool = False
    #: git listing the tree it ended in, started as the tree ended (``Place.listing``).
    listing: ListingMeanwhile | None = None

    def listed(self) -> list[StatusEntry] | None:
        """The listing's entries; ``None`` when none was taken or git failed (the
        outcome lists again, and reports that failure as its own)."""
        listing, self.listing = self.listing, None
        if listing is None:
            return None
        try:
            return listing.entries()
        except GitError:
            return None
        finally:
            listing.close()


@dataclass
class _Gating:
    """An item whose agent said done, while its verification gates run (one at a
    time, in order, in the tree it worked in): its slot stays taken meanwhile."""

    item: Item
    result: AgentResult
    tree: Path | None
    gate: Gate


@dataclass
class Engine:
    """One run's slots: what runs, what waits to run again, what is being landed."""

    run: RunContext
    place: Place
    number: int = 0
    running: dict[str, _Agent] = field(default_factory=dict)
    #: Items whose verification gates run (``loop.verify``).
    gating: dict[str, _Gating] = field(default_factory=dict)
    #: Items to run again (no signal with attempts left, or a usage limit waited out).
    retry: list[str] = field(default_factory=list)
    #: Each item as it was when first taken, before its retries (the circuit breaker's).
    taken: dict[str, Item] = field(default_factory=dict)
    #: Items marked done whose work the place is landing: each as it was before, and
    #: its last attempt's handle.
    landing: dict[str, tuple[Item, str]] = field(default_factory=dict)
    pause: bool = False
    #: The run ends now (the circuit breaker, a limit no wait lifts, ``--on-limit stop``).
    ending: Ending | None = None
    #: ``--max-cost`` reached: nothing more starts; the run ends once the rest settle.
    spent: Ending | None = None

    def __post_init__(self) -> None:
        self.number = self.run.state.iteration or 0

    @property
    def busy(self) -> int:
        """The slots taken: agents running, and items whose gates run."""
        return len(self.running) + len(self.gating)

    # --- the run ---------------------------------------------------------------------------

    def go(self) -> LoopResult | None:
        """Run items until nothing more can start and every agent has settled; a
        ``LoopResult`` when the run stopped, paused or ended early, ``None`` when it
        ran out of work or budget (the session then ends it as any run)."""
        run, place = self.run, self.place
        try:
            if run.options.verify and not self._baseline():
                return self.stopped()
            while True:
                if run.stop():
                    return self.stopped()
                left = left_branch(run)
                if left is not None:
                    raise BranchLeft(left)
                self._apply(place.events())
                ended = self._look(wait=bool(self.running or self.gating))
                if ended and not self.pause and self.spent is None:  # their slots' next
                    place.ahead(self._coming, place.slots - self.busy + len(ended))
                for agent, manifest in ended:
                    del self.running[agent.item.id]
                    self._ended(agent, manifest)
                    if self.ending is not None:
                        return self.ended(self.ending)
                self._gates_ended()
                if run.stop():  # (one during a limit wait): nothing more starts
                    return self.stopped()
                if not self.pause and self.spent is None:
                    self._start_what_can()
                run.save_noted()  # the slots that freed, when no start wrote them
                if self.running or self.gating:
                    continue
                if place.outstanding:  # nothing runs: wait for the git work (it may free work)
                    self._apply(place.events(wait=POLL_SECONDS))
                    continue
                if self.pause:
                    return self._paused()
                if self.spent is not None:
                    return self.ended(self.spent)
                break
            self._set_aside(self.retry)  # the budget ran out in the middle of an item's retries
            self._drain()
            for item_id in self.retry:
                run.store.transition(item_id, "pending")
            place.finish()
            return None
        except BranchLeft as left:
            return self._switched(left.what)
        finally:
            for agent in self.running.values():
                agent.listed()

    # --- starting --------------------------------------------------------------------------

    def _start_what_can(self) -> None:
        """Fill the free slots: retries first (where they ran), then the next
        selectable items, while the iteration budget lasts."""
        run, place = self.run, self.place
        if self.busy >= place.slots or self.number >= run.options.iterations:
            return
        place.ahead(self._coming, 0)
        started = False
        while self.busy < place.slots and self.number < run.options.iterations:
            if self.retry and not place.ready(self.retry[0]):
                return  # its last attempt is being set aside; the next look starts it
            item = run.store.get(self.retry[0]) if self.retry else self._next_item()
            if item is None:
                return
            self.spent = agent_run.over_budget(run)
            if self.spent is not None:  # --max-cost: the running agents finish, nothing starts
                return
            if self.retry:
                self.retry.pop(0)
            try:
                tree = place.take(item)
            except Unavailable as refused:
                self._settled(item.id, outcomes.block(run, place, item, refused.reason,
                                                      needs_human=True, clear=False))
                continue
            self.number += 1
            self.taken.setdefault(item.id, item)
            place.began(item.id)
            handle, attempt = start_agent(
                run, item, self.number, worktree=tree,
                running=tuple(self.running) if place.slots > 1 else None)
            now = time.monotonic()
            self.running[item.id] = _Agent(run.store.get(item.id), handle, tree, now, attempt,
                                           heard_at=now)
            started = True
        if started:
            place.ahead(self._coming, 0)

    def _next_item(self) -> Item | None:
        """The item that starts next: the serial rule, an item being landed counted as
        not done yet."""
        return next(iter(self._next_items(1)), None)

    def _next_items(self, count: int) -> list[Item]:
        """The ``count`` items that would start next, in order: the serial rule applied
        again with each one chosen counted as running (an item being landed counts
        as not done yet)."""
        taken = set(self.landing)
        found: list[Item] = []
        items = self.run.store.items()
        while len(found) < count:
            item = select_next([i.with_changes(status="in_progress") if i.id in taken else i
                                for i in items] if taken else items)
            if item is None:
                break
            found.append(item)
            taken.add(item.id)
        return found

    def _coming(self, count: int) -> list[Item]:
        """Up to ``count`` items that would start next, as slots free up, within the
        iteration budget; none while a retry waits to go first (``Place.ahead``)."""
        if self.retry:
            return []
        return self._next_items(min(count, self.run.options.iterations - self.number))

    def _show_running(self, *, now: bool = True) -> None:
        """state.json names the running agents: a slot's item is ``currentItem`` (set
        as it starts, cleared as it settles); with several slots ``runningItems``
        lists them all and ``currentItem`` is the first (written as each one starts,
        ``start_agent``). ``now=False``, as an agent ends: noted, and written with the
        run's next save — the start that takes its slot, its outcome's, or at the end
        of the engine's look (``go``) — so a freed slot costs no write of its own."""
        if self.place.slots > 1:
            busy = (*self.running, *self.gating)
            changes = {"current_item": next(iter(busy), None), "running_items": busy}
            if now:
                self.run.save(**changes)
            else:
                self.run.note(**changes)

    # --- watching --------------------------------------------------------------------------

    def _look(self, *, wait: bool) -> list[tuple[_Agent, Manifest]]:
        """One look at every running agent: its output read (and followed), and those
        that ended with their manifests. ``wait``: up to ``POLL_SECONDS`` for the first,
        or until the place's git work has news (it wakes the wait: ``Supervisor.wake``).
        A serial run's agent's tree is seen to end before its end is recorded, so the
        place lists the tree meanwhile (``Place.listing``)."""
        run = self.run
        supervisor = run.supervisor
        running = list(self.running.values())
        timeout = POLL_SECONDS if wait else 0.0
        if self.place.slots == 1 and running and not running[0].tree_ended:
            only = running[0]
            only.tree_ended = supervisor.wait_ended(only.handle, timeout)
            if only.tree_ended:
                only.listing = self.place.listing()
            timeout = timeout if only.tree_ended else 0.0
        gates = [gating.gate.handle for gating in self.gating.values()]
        settled = set(supervisor.wait_any([agent.handle for agent in running] + gates, timeout))
        ended: list[tuple[_Agent, Manifest]] = []
        idle_limit = run.options.idle_minutes * 60 if run.options.idle_minutes else None
        for agent in running:
            final = agent.handle in settled
            if final:
                ended.append((agent, supervisor.wait(agent.handle)))
            heard = agent.output_bytes
            self._read(agent, final=final)
            moment = time.monotonic()
            if agent.output_bytes != heard:
                agent.heard_at = moment
            elif (idle_limit is not None and not agent.idle
                  and moment - agent.heard_at >= idle_limit):
                agent.idle = True  # silent too long: end its tree, then the usual retry or deferral
                supervisor.stop(agent.handle, "terminate")
        self._show()
        return ended

    def _read(self, agent: _Agent, *, final: bool = False) -> None:
        """How much the agent printed, and with ``--follow`` its new lines: a
        structured agent's text as its reader follows it, else the output itself,
        whole lines in order (``final``: up to its end); with several slots each line
        names its item."""
        supervisor = self.run.supervisor
        agent.output_bytes = supervisor.output_bytes(agent.handle)
        if not self.run.options.follow:
            return
        if agent.attempt.reader is not None:
            lines = agent.attempt.followed.take()
        else:
            if agent.follower is None:
                agent.follower = LineFollower(supervisor, agent.handle,
                                              f"git forge proc output {agent.item.id}")
            try:
                lines = agent.follower.take(final=final)
            except ProcessError as exc:
                if exc.code != "cursor_ahead":
                    raise
                return  # bytes lost to a full disk: the storage error ends the run at its end
        if not lines:
            return
        if self.place.slots > 1:
            lines = [f"[{agent.item.id}] {line}" for line in lines]
        self.run.progress.output("\n".join(lines) + "\n")

    def _show(self) -> None:
        """What the progress shows while agents run: a slot's item, elapsed and output
        (one slot), or a line per running agent and the items being landed."""
        now = time.monotonic()
        progress = self.run.progress
        if self.place.slots == 1:
            for agent in self.running.values():
                progress.tick(now - agent.started, agent.output_bytes)
            return
        progress.agents([RunningAgent(a.item, now - a.started, a.output_bytes, a.tree or Path())
                         for a in self.running.values()], tuple(self.landing))

    # --- an agent ended: the attempt, then its signal --------------------------------------

    def _ended(self, agent: _Agent, manifest: Manifest) -> None:
        run, place = self.run, self.place
        item_id = agent.item.id
        place.ended(item_id)
        self._show_running(now=False)
        result = agent_result(run, agent.item, agent.handle, manifest, agent.attempt,
                              idle=agent.idle, listed=agent.listed())
        remove_prompt_files(run.workspace.state_dir, item_id)
        step = agent_run.after_attempt(run, self.taken[item_id], result)  # receipt, limit, breaker
        if isinstance(step, Ending) or step is Step.STOPPED:  # the run ends at this attempt
            self._set_aside([item_id])
            if isinstance(step, Ending):
                self.ending = step
            return  # (a stop during a limit wait: the next look ends the run)
        if step is Step.RETRY:  # a limit waited out: the attempt does not count
            self.number -= 1
            run.save(iteration=self.number)
            outcomes.again(run, place, agent.item, result.listed)
            self.retry.append(item_id)
            return
        left = left_branch(run)  # nothing is settled on a checkout switched away
        if left is not None:
            raise BranchLeft(left)
        if result.signal.kind == "done" and run.options.verify:
            self.gating[item_id] = _Gating(agent.item, result, agent.tree, start_gate(
                run, item_id, 0, agent.tree or run.workspace.root, iteration=self.number))
            return
        self._settle(item_id, result)

    def _settle(self, item_id: str, result: AgentResult) -> None:
        """The attempt's signal settled for its item (``outcomes``)."""
        run, place = self.run, self.place
        before = run.store.get(item_id)
        outcome = outcomes.settle(run, place, before, result)
        if outcome is Outcome.RETRY:
            self.retry.append(item_id)
        elif outcome is Outcome.LANDING:
            self.landing[item_id] = (before, result.handle)
        self._settled(item_id, outcome)

    # --- the verification gates ----------------------------------------------------------

    def _baseline(self) -> bool:
        """The gates' results on the starting tip (``loop.verifyBaseline``), once, each
        told when it fails there; ``False`` when the run was stopped meanwhile."""
        run = self.run
        if not run.options.verify_baseline or run.baselines:
            return True
        tip = run.repo.head_commit_id()  # the starting tip, read before a commit lands
        baselines = run_baseline(run)
        if baselines is None:
            return False
        run.baselines = baselines
        if tip is not None:
            run.baselined.add(tip)
        for baseline in baselines:
            told = describe_baseline(baseline, run.branch or "HEAD")
            if told is not None:
                run.progress.note(told)
        return True

    def _gates_ended(self) -> None:
        """Each gate that ended, judged against its baseline: the item's next gate
        starts, or — every gate passed — its signal is settled as done (its tree listed
        again: the gates may have written there), or — one failed — it is a failed
        attempt (``outcomes.verify_failed``)."""
        if not self.gating:
            return
        run = self.run
        supervisor = run.supervisor
        ended = supervisor.wait_any([g.gate.handle for g in self.gating.values()], 0.0)
        for gating in [g for g in list(self.gating.values()) if g.gate.handle in ended]:
            item_id = gating.item.id
            gate = gating.gate
            verdict, problem, took = judged(run, item_id, gate, supervisor.wait(gate.handle))
            count_check(run, item_id, took, verdict.passed)
            if problem is not None:
                run.progress.note(f"item {item_id}: `{gate.command}`'s report: {problem}")
            left = left_branch(run)
            if left is not None:
                raise BranchLeft(left)
            if verdict.passed and gate.position + 1 < len(run.options.verify):
                self.gating[item_id] = dataclasses.replace(gating, gate=start_gate(
                    run, item_id, gate.position + 1, gating.tree or run.workspace.root,
                    iteration=self.number))
                continue
            del self.gating[item_id]
            result = dataclasses.replace(gating.result, listed=None)
            failures = dict(run.state.verify_failures)
            if verdict.passed:
                failures.pop(item_id, None)
            else:
                failures[item_id] = verdict.reason or "verify failed"
            run.note(verify_failures=tuple(failures.items()))  # written with its outcome
            if verdict.passed:
                self._settle(item_id, result)
                continue
            outcome = outcomes.verify_failed(run, self.place, run.store.get(item_id), result,
                                             verdict)
            if outcome is Outcome.RETRY:
                self.retry.append(item_id)
            self._settled(item_id, outcome)

    def _settled(self, item_id: str, outcome: Outcome) -> None:
        if outcome is Outcome.RETRY:
            return
        if outcome is not Outcome.LANDING:
            self.taken.pop(item_id, None)
        if outcome is Outcome.NEEDS_HUMAN and self.run.options.pause_on_needs_human:
            self.pause = True

    def _apply(self, events: list[Event]) -> None:
        """What the place's git work came to, for the item, the journal and the progress."""
        run = self.run
        for event in events:
            if isinstance(event, Note):
                run.progress.note(event.text)
            elif isinstance(event, Escaped):
                self._escaped(event)
            elif isinstance(event, (Landed, NotLanded)):
                self._landed(event)

    def _landed(self, landing: Landed | NotLanded) -> None:
        found = self.landing.pop(landing.item_id, None)
        if found is None:  # settled already (blamed for an escape, or landed)
            return
        before, handle = found
        if isinstance(landing, NotLanded) and landing.stopped:  # the ending puts it to pending
            self.run.store.replace(before)
            return
        self.taken.pop(landing.item_id, None)
        self._settled(landing.item_id,
                      outcomes.landed(self.run, self.place, before, landing, handle))

    def _escaped(self, event: Escaped) -> None:
        """An agent wrote outside its worktree: reported and left for reconcile; when
        the item whose git work found it wrote it alone, that item is blocked."""
        run = self.run
        escape = event.escape
        where = "in the main checkout" if escape.into is None else "there"
        run.journal.append("agent_escaped", itemId=escape.item_id,
                           paths=[entry.path for entry in escape.entries], ran=list(escape.ran),
                           **({"into": escape.into} if escape.into is not None else {}))
        run.progress.note(f"{escape.reason} — left {where} for git forge reconcile")
        if not event.own:
            return
        item_id = event.item_id
        if item_id in self.retry:
            self.retry.remove(item_id)
        if item_id in self.landing:
            self._landed(NotLanded(item_id, escape.reason, cleared=True))
        elif item_id not in self.running and run.store.get(item_id).status == "in_progress":
            self.taken.pop(item_id, None)
            self._settled(item_id, outcomes.block(run, self.place, run.store.get(item_id),
                                                  escape.reason, clear=False))

    # --- ending ----------------------------------------------------------------------------

    def _set_aside(self, item_ids: list[str]) -> None:
        """The run ends with these items between attempts (or at the attempt that ended
        it): what each one's agent left is kept as the item's abandoned work, which
        the item's next prompt names — never left in the tree for nobody, nor for a
        session no later run resumes."""
        for item_id in item_ids:
            self.place.clear(self.run.store.get(item_id), None)
            if self.run.state.current_item == item_id:  # its changes are in the tree no more
                self.run.save(current_item=None, running_items=None)

    def _drain(self) -> None:
        """The place's git work under way, finished and acted on."""
        while self.place.outstanding:
            self._apply(self.place.events(wait=POLL_SECONDS))

    def _wind_down(self, *, cancel: bool = False) -> None:
        """How a run ends early: every agent ends; the git work under way is finished
        (``cancel``: only the job under way, the rest left undone); each running item,
        and each whose work did not land, goes back to pending; the place records what
        is left to record (not after ``cancel``)."""
        run = self.run
        try:
            run.supervisor.shutdown()
        except ProcessError as exc:
            run.progress.note(f"shutdown: {exc}")
        for agent in self.running.values():
            agent.listed()
        self.running.clear()
        self.gating.clear()  # their processes ended with the rest; their items back to pending
        self._show_running()
        if cancel:
            self.place.close(cancel=True)
        else:
            self._set_aside(self.retry)
        self._drain()
        for before, _ in self.landing.values():
            run.store.replace(before)
        self.landing.clear()
        for item in run.store.items():  # running, ended but not settled, or between retries
            if item.status == "in_progress":
                run.store.transition(item.id, "pending")
        if not cancel:
            self.place.finish()
        remove_prompt_files(run.workspace.state_dir)

    def stopped(self) -> LoopResult:
        """A stop request or signal: every agent ends, its item back to pending, its
        work kept where it ran."""
        run = self.run
        running = sorted([*self.running, *self.gating])
        self._wind_down()
        self._record_stop(running)
        # With no agent running (a stop during a limit wait, between attempts), whatever
        # the last attempt left was set aside and said so as it was kept: the tree holds
        # nothing of an agent's for this line to point at.
        return result(run, LOOP_STOPPED, "stopped",
                      self.place.stopped if running else "stopped; no agent was running")

    def _switched(self, what: str) -> LoopResult:
        """The main checkout left the run's branch: every agent ends, nothing more is
        committed (the git work not under way is not done), the agents' work stays."""
        run = self.run
        running = sorted([*self.running, *self.gating])
        self._wind_down(cancel=True)
        branch = run.branch
        back = (f"git checkout {branch}" if branch is not None else
                f"git checkout --detach {(run.state.base_commit_hash or '')[:12]}")
        message = (f"stopped: the main checkout was switched {what} while the loop ran on "
                   f"{branch or 'a detached HEAD'}; nothing was committed, and "
                   f"{self.place.kept} for git forge reconcile; to go on: {back}, then "
                   "git forge loop run")
        self._record_stop(running, left=(branch, what), reason=message)
        return result(run, LOOP_STOPPED, "stopped", message)

    def _record_stop(self, running: list[str], *, left: tuple[str | None, str] | None = None,
                     reason: str | None = None) -> None:
        """A stopped run, recorded: state.json says so; the journal says, when the
        main checkout ``left`` the run's branch, which branch and how, then
        ``loop_cancelled`` (with the items that were running, when several could,
        and the ``reason`` when one was given); the notifier is told."""
        run = self.run
        current = run.state.current_item
        run.save(status="stopped")
        if left is not None:
            run.journal.append("branch_left", branch=left[0], switched=left[1])
        told: CancelledFields = {} if reason is None else {"reason": reason}
        if self.place.slots > 1:
            told["running"] = running
        run.journal.append("loop_cancelled", itemId=current, **told)
        run.agent.notifier.send(notify.STOPPED, run.state.run_id or "", itemId=current)

    def ended(self, ending: Ending) -> LoopResult:
        """The run ends at the circuit breaker, a usage limit or ``--max-cost``: wound
        down as a stop is, with the ending's code, status and message."""
        self._wind_down()
        agent_run.record_ending(self.run, ending)
        return result(self.run, ending.code, ending.status, ending.message)

    def _paused(self) -> LoopResult:
        """Paused for a human: the running agents have finished, nothing more starts."""
        run = self.run
        self._set_aside(self.retry)
        self._drain()
        for item_id in self.retry:
            run.store.transition(item_id, "pending")
        self.place.finish()
        run.save(status="paused_human")
        item_id = run.state.needs_human_items[-1]
        run.journal.append("loop_paused", itemId=item_id)
        reason = run.store.get(item_id).blocked_reason
        run.agent.notifier.send(notify.PAUSED, f"{item_id}:{reason}", itemId=item_id,
                                reason=reason)
        return result(run, LOOP_PAUSED, "paused_human",
                      "paused for a human decision: run git forge recover")


def result(run: RunContext, code: int, status: str, message: str = "") -> LoopResult:
    """The run's result as it ends now, with what its agents cost."""
    return loop_result(run.store.items(), run.state, code, status, message, costs(run),
                       list(run.uncommitted.values()))


def costs(run: RunContext) -> RunCostsJSON | None:
    """This run's totals and its items' (``receipts.costs_json``), when it ran any."""
    try:
        totals, items = receipts.run_totals(run.workspace.state_dir, run.state.run_id)
    except ForgeError:
        return None
    if not totals.attempts:
        return None
    return {"run": totals.to_json(),
            "items": {item_id: each.to_json() for item_id, each in items.items()}}

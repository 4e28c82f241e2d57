"""The chaos driver: real `endstate serve` processes on one store, many runs at once, people answering
as questions appear, and processes killed at random moments (helpers; no tests here).

`Chaos(store_url, tmp, seed).play(rounds)` starts runs of `chaos_agents`' agent over HTTP, answers,
approves and denies what they ask, and each round stops one process at random: SIGKILL (most often),
SIGTERM, or SIGSTOP held past the lease while another replica goes on (then SIGCONT). It restarts
processes (sometimes two on the store), and at the end drives every run to its end with one fresh
process, whose metrics it reads. `check_invariants` then reads the store and the outside world.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pg
from chaos_agents import APPROVED, Execution, plan_for, read_world, token_of
from ports import free_port
from test_runner_agents import env_with_tests
from test_service_support import TOKEN, Server, metric, spawn, wait_for

from agent.durable.store import open_store
from agent.durable.store.base import RunRecord, RunStatus

CATALOG = "chaos_agents:catalog"
LEASE = 2.0
STORE_TIMEOUT = "2"  # seconds: a process stalled inside a write (SIGSTOP) holds the others' writes past it
SERVE_OPTIONS = ("--lease", str(LEASE), "--store-timeout", STORE_TIMEOUT, "--grace", "1")  # every serve alike
NAMED = {"success", "limit", "gave_up", "need_help", "no_progress", "help_timeout", "cancelled", "error"}


@dataclass
class Blow:
    """One stop the driver dealt a process: its pid, the signal's name and when (time.time())."""

    pid: int
    kind: str
    at: float


@dataclass
class Chaos:
    store_url: str
    tmp: Path
    seed: int
    runs_per_round: int = 6
    rng: random.Random = field(init=False)
    servers: list[Server] = field(default_factory=list)
    blows: list[Blow] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    answered: int = 0
    final_metrics: str = ""
    left_at_final: set[str] = field(default_factory=set)
    waiting_at_final: int = 0
    pending_gauge_at_final: float | None = None
    unlisted: set[str] = field(
        default_factory=set
    )  # waiting runs /pending missed, or listed runs not waiting
    accepted: dict[str, int] = field(default_factory=dict)  # run id -> the answers a 202 took
    started: list[str] = field(default_factory=list)  # the run ids a start was accepted for
    ends: dict[int, float] = field(default_factory=dict)  # pid -> the runs' ends it counted, last read

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.world = self.tmp / "world.log"

    # -- processes -------------------------------------------------------------------------------

    def start_server(self) -> Server:
        server = Server(self.store_url, self.tmp, *SERVE_OPTIONS, catalog=CATALOG)
        self.servers.append(server)
        return server

    def start_together(self, count: int) -> None:
        """`count` processes started at the same moment (threads), as replicas come back together."""
        threads = [threading.Thread(target=self.start_server) for _ in range(count)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)

    def killed_starting(self) -> None:
        """A process killed while it starts: inside its recovery of the runs left behind, before it is
        ready (a crash loop's restarts die there)."""
        port = free_port()
        env = {**env_with_tests(), "ENDSTATE_TOKEN": TOKEN}
        args = ["serve", "--port", str(port), *SERVE_OPTIONS, "--catalog", CATALOG]
        proc = spawn(*args, store=self.store_url, env=env, log=self.tmp / f"early-{port}.log")
        time.sleep(self.rng.uniform(0.3, 3.0))
        self.blows.append(Blow(proc.pid, "EARLY", time.time()))
        proc.kill()
        proc.wait(timeout=30)

    def killed_answering(self) -> None:
        """A person answers one waiting run from a shell (`endstate answer`/`approve`, which runs the rest
        of the run in its own process), and that process is killed at a random moment."""
        client = self.client()
        if client is None:
            return
        with client:
            try:
                waiting = client.get("/pending", params={"limit": 50}).json()["pending"]
            except (httpx.TransportError, ValueError, KeyError):
                return
        if not waiting:
            return
        item = self.rng.choice(waiting)
        command = ["approve", item["run_id"]] if item["pending"] else ["answer", item["run_id"], "go on"]
        args = [*command, "--lease", str(LEASE), "--store-timeout", STORE_TIMEOUT, "--catalog", CATALOG]
        proc = spawn(
            *args, store=self.store_url, log=self.tmp / f"cli-{item['run_id']}-{time.time():.0f}.log"
        )
        time.sleep(self.rng.uniform(0.2, 2.5))
        self.blows.append(Blow(proc.pid, "CLI", time.time()))
        proc.kill()
        proc.wait(timeout=30)

    def database_restarted(self) -> None:
        """The PostgreSQL server restarts (a fast shutdown: every connection cut) and is back after a
        random while, shorter or longer than the runner's retries of a failed write."""
        server = pg.shared_server()
        self.blows.append(Blow(0, "DB", time.time()))
        server.pause()
        self.answer_for(self.rng.uniform(0.2, 10.0))  # answers fail meanwhile: the runs keep waiting
        server.resume()

    def alive(self) -> list[Server]:
        return [s for s in self.servers if s.proc.poll() is None]

    def blow(self, server: Server) -> None:
        """Stop `server` one of the ways a process stops: mostly SIGKILL."""
        kind = self.rng.choices(["KILL", "TERM", "TERMKILL", "STOP"], weights=[6, 2, 1, 2])[0]
        if kind == "STOP" and len(self.alive()) < 2:
            self.start_server()  # a stalled replica is taken over by another
        self.count_ends(server)
        self._deal(server, kind)
        # when it was over: the turn in flight at a SIGTERM goes on (its calls too) until the process
        # ends it, and a stalled process goes on from where it stopped
        self.blows.append(Blow(server.proc.pid, kind, time.time()))

    def _deal(self, server: Server, kind: str) -> None:
        if kind == "KILL":
            server.kill()
        elif kind == "TERM":
            server.stop(signal.SIGTERM)
        elif kind == "TERMKILL":  # an orchestrator's shutdown: SIGTERM, then SIGKILL before it is done
            os.kill(server.proc.pid, signal.SIGTERM)
            time.sleep(self.rng.uniform(0, 1.5))
            server.kill()
        else:
            os.kill(server.proc.pid, signal.SIGSTOP)
            self.answer_for(LEASE * self.rng.uniform(0.5, 4.0))  # around its lease: taken over, or not
            os.kill(server.proc.pid, signal.SIGCONT)

    def close(self) -> None:
        for server in self.servers:
            try:
                if server.proc.poll() is None:
                    os.kill(server.proc.pid, signal.SIGCONT)
                server.kill()
            except ProcessLookupError:
                pass

    # -- people and callers ----------------------------------------------------------------------

    def client(self) -> httpx.Client | None:
        live = self.alive()
        return self.rng.choice(live).client() if live else None

    def start_runs(self, count: int) -> None:
        """POST `count` runs at once (threads), each with a seed and a run id of its own; a start whose
        reply was lost (its process died under it) is sent again, with the same id, to a live one."""
        seeds = [self.rng.randrange(1 << 30) for _ in range(count)]
        threads = [threading.Thread(target=self._start_one, args=(s,)) for s in seeds]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)

    @staticmethod
    def _patience(seed: int) -> dict[str, Any]:
        """How long a run waits for a person: mostly an hour; some a second or three, then end
        (`help_timeout`) or go on with the default answer, racing the people and the blows."""
        rng = random.Random(seed)
        kind = rng.choice(["patient", "patient", "patient", "end", "resume"])
        return {} if kind == "patient" else {"wait": round(rng.uniform(0.5, 3.0), 2), "on_timeout": kind}

    def _start_one(self, seed: int) -> None:
        run_id = f"chaos-{seed}"
        body = {"agent": "chaos", "task": f"chaos {seed}", "run_id": run_id}
        body["state"] = {"seed": seed, "world": str(self.world)} | self._patience(seed)
        self.run_ids.append(run_id)  # checked whether or not a start took: a lost reply may hide one
        for _ in range(50):
            client = self.client()
            if client is None:
                return
            try:
                with client:
                    r = client.post("/runs", json=body)
            except httpx.TransportError:
                continue
            if r.status_code in (200, 202):
                assert r.json()["run_id"] == run_id, r.text
                self.started.append(run_id)
                return
            time.sleep(0.2)

    def answer_once(self) -> None:
        """Answer, approve or deny every request `/pending` lists now (a 409 or a dead process is fine:
        someone else answered, or the process died under the call)."""
        client = self.client()
        if client is None:
            return
        with client:
            try:
                listed = client.get("/pending", params={"limit": 500})
                if listed.status_code != 200:
                    return
                for item in listed.json()["pending"]:
                    if item["damaged"] or item["expired"]:
                        continue
                    self._reply(client, item)
            except httpx.TransportError:
                return

    def _reply(self, client: httpx.Client, item: dict[str, Any]) -> None:
        run_id, segments = item["run_id"], item["segments"]
        if item["pending"] and self.rng.random() < 0.8:
            r = client.post(f"/runs/{run_id}/approve", json={"segments": segments, "by": "chaos"})
        elif item["pending"]:
            r = client.post(f"/runs/{run_id}/deny", json={"segments": segments, "reason": "no"})
        else:
            r = client.post(f"/runs/{run_id}/answer", json={"answer": "go on", "segments": segments})
        if r.status_code == 202:
            self.answered += 1
            self.accepted[run_id] = self.accepted.get(run_id, 0) + 1

    def answer_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.answer_once()
            time.sleep(0.1)

    # -- the play --------------------------------------------------------------------------------

    def play(self, rounds: int) -> None:
        self.start_server()
        for _ in range(rounds):
            if not self.alive() and self.rng.random() < 0.4:
                self.start_together(2)  # both recover the dead workers' runs at once
            elif not self.alive() or (len(self.alive()) < 2 and self.rng.random() < 0.3):
                self.start_server()
            count = self.rng.randint(1, self.runs_per_round)
            if self.rng.random() < 0.3:  # the blow lands while the starts are in flight
                blow = threading.Timer(self.rng.uniform(0, 1), self.blow, [self.rng.choice(self.alive())])
                blow.start()
                self.start_runs(count)
                blow.join()
            else:
                self.start_runs(count)
                self.answer_for(self.rng.uniform(0.2, 2.5))
                self.blow(self.rng.choice(self.alive()))
            if self.rng.random() < 0.3:
                self.killed_starting()
            if self.rng.random() < 0.3:
                self.killed_answering()
            if self.store_url.startswith("postgresql") and self.rng.random() < 0.25:
                self.database_restarted()
        self.finish()

    def finish(self, timeout: float = 120) -> None:
        """Every process killed; then one fresh one drives every run left to its end."""
        for server in self.alive():
            os.kill(server.proc.pid, signal.SIGCONT)
            self.count_ends(server)
            self.blows.append(Blow(server.proc.pid, "KILL", time.time()))
            server.kill()
        self.left_at_final = {r.run_id for r in self.records() if r.status is not RunStatus.FINISHED}
        final = self.start_server()
        settled = wait_for(self.settled, what="the last process to recover every run it can go on with")
        self.waiting_at_final = sum(r.status is RunStatus.WAITING for r in settled)
        self.pending_gauge_at_final = self.scrape_sum(final, "agent_help_pending")  # nobody answers meanwhile
        with final.client() as client:
            listed = client.get("/pending", params={"limit": 500}).json()["pending"]
        self.unlisted = {r.run_id for r in settled if r.status is RunStatus.WAITING} ^ {
            i["run_id"] for i in listed
        }

        def all_ended() -> bool:
            self.answer_once()
            return all(r.status is RunStatus.FINISHED for r in self.records())

        try:
            wait_for(all_ended, timeout=timeout, what="every run to end under the last process")
        except AssertionError as exc:
            stuck = [f"{r.run_id} {r.status} {r.stop_reason} {r.owner}" for r in self.records()]
            raise AssertionError(
                f"{exc}; runs not ended: {[s for s in stuck if ' finished ' not in s]}"
            ) from None
        self.final_metrics = httpx.get(f"{final.url}/metrics", timeout=10).text
        self.ends[final.proc.pid] = terminal_stops(self.final_metrics)
        final.stop(signal.SIGTERM)

    def count_ends(self, server: Server) -> None:
        """Read the runs' ends `server` counted so far (a process killed next loses its counters)."""
        try:
            text = httpx.get(f"{server.url}/metrics", timeout=5).text
        except httpx.TransportError:
            return
        self.ends[server.proc.pid] = terminal_stops(text)

    def settled(self) -> list[RunRecord] | None:
        """The runs, once none is running or cancelled (each waits for a person or ended); else None."""
        records = self.records()
        busy = (RunStatus.RUNNING, RunStatus.CANCELLED)
        return None if any(r.status in busy for r in records) else records

    def scrape_sum(self, server: Server, name: str) -> float:
        text = httpx.get(f"{server.url}/metrics", timeout=10).text
        return sum(
            float(line.rpartition(" ")[2]) for line in text.splitlines() if line.startswith(name + "{")
        )

    def save(self) -> None:
        """The play's blows and taken answers as `play.json` in its folder."""
        blows = [b.__dict__ for b in self.blows]
        play = {"seed": self.seed, "blows": blows, "accepted": self.accepted, "started": self.started}
        (self.tmp / "play.json").write_text(json.dumps(play))

    def summary(self) -> str:
        """What the play did, for the test's output."""
        kinds = {
            k: sum(b.kind == k for b in self.blows)
            for k in ("KILL", "TERM", "TERMKILL", "STOP", "EARLY", "CLI", "DB")
        }
        world = read_world(self.world)
        begun = [e.key for e in world if e.phase == "begin"]
        again = len(begun) - len(set(begun))
        return (
            f"seed {self.seed}: {len(self.run_ids)} runs, {len(self.servers)} processes, blows {kinds}, "
            f"{self.answered} answers taken, {len(begun)} tool executions ({again} ran again)"
        )

    # -- the store -------------------------------------------------------------------------------

    def records(self) -> list[RunRecord]:
        """Every run in the store (a start whose reply was lost included)."""
        store = open_store(self.store_url)
        try:
            return list(store.list_runs(limit=None))
        finally:
            store.close()

    def journals(self) -> dict[str, list[dict[str, Any]]]:
        store = open_store(self.store_url)
        try:
            out = {}
            for run_id in [r.run_id for r in store.list_runs(limit=None)]:
                snap = store.snapshot(run_id)  # raises on a journal with a hole or a lost end
                out[run_id] = json.loads(snap.to_json())["journal"] if snap else []
            return out
        finally:
            store.close()


def check_invariants(chaos: Chaos) -> list[str]:
    """Every broken promise found, as lines (empty: all held)."""
    problems: list[str] = []
    records = {r.run_id: r for r in chaos.records()}
    journals = chaos.journals()
    world = read_world(chaos.world)
    problems += _ends(chaos, records)
    for run_id, journal in journals.items():
        problems += _journal(run_id, journal) + _script(chaos, records[run_id], journal)
    problems += _executions(chaos, journals, world)
    problems += _metrics(chaos, records)
    return problems


def _ends(chaos: Chaos, records: dict[str, RunRecord]) -> list[str]:
    out = [f"run {i} was accepted but is not in the store" for i in chaos.started if i not in records]
    out += [f"run {i} is in the store but was never started" for i in records if i not in chaos.run_ids]
    for r in records.values():
        if r.status is not RunStatus.FINISHED or str(r.stop_reason) not in NAMED:
            out.append(f"run {r.run_id} did not end: {r.status} {r.stop_reason}")
        elif str(r.stop_reason) == "help_timeout" and r.state.get("on_timeout") == "end":
            pass  # it waited its second or three for nobody
        elif str(r.stop_reason) != "success":
            out.append(f"run {r.run_id} ended {r.stop_reason} ({r.error_type}): {r.note[:300]}")
        numbers = {**r.usage.flat(), "turns": r.turns, "active": r.active_seconds, "wait": r.waiting_seconds}
        out += [f"run {r.run_id}: {k} is negative ({v})" for k, v in numbers.items() if (v or 0) < 0]
    return out


def _journal(run_id: str, journal: list[dict[str, Any]]) -> list[str]:
    """Each result answers a call its reply made, once; a finished run left no call unanswered."""
    out: list[str] = []
    asked: set[str] = set()
    answered: set[str] = set()
    for entry in journal:
        if entry["type"] == "reply":
            asked |= {p["id"] for p in entry["parts"] if p.get("type") == "call" and p["name"] in _TOOLS}
        elif entry["type"] == "result":
            if entry["call_id"] in answered:
                out.append(f"run {run_id}: call {entry['call_id']} has two results")
            answered.add(entry["call_id"])
    if journal and journal[-1]["type"] == "stopped" and journal[-1]["reason"] == "help_timeout":
        answered |= {
            e["suspension"].get("call_id") for e in journal if e["type"] == "suspended"
        }  # never approved
    if asked - answered:
        out.append(f"run {run_id}: calls {sorted(asked - answered)} have no result")
    return out


_TOOLS = {"work", "nap", APPROVED}


def _script(chaos: Chaos, record: RunRecord, journal: list[dict[str, Any]]) -> list[str]:
    """A run followed its script: one reply per step, in order, none lost or played twice, and the
    turns it counted are its replies."""
    plan = plan_for(int(record.state["seed"]))
    want = [[b["name"] for b in step] for step in plan]
    replies = [e for e in journal if e["type"] == "reply"]
    got = [[p["name"] for p in e["parts"] if p.get("type") == "call"] for e in replies]
    ended_early = str(record.stop_reason) == "help_timeout"  # a prefix of its script, then no answer
    played = got == want or (ended_early and got == want[: len(got)])
    out = [] if played else [f"run {record.run_id} played {got}, not its script {want}"]
    people = sum(e["type"] == "answered" and e.get("by", "person") == "person" for e in journal)
    if people < chaos.accepted.get(record.run_id, 0):
        out.append(
            f"run {record.run_id}: {chaos.accepted[record.run_id]} answers were taken (202), {people} kept"
        )
    last = journal[-1] if journal else {}
    if (last.get("type"), last.get("reason")) != ("stopped", str(record.stop_reason)):
        out.append(f"run {record.run_id} ended {record.stop_reason}, its journal with {last}")
    spent = sum(e.get("input_tokens", 0) + e.get("output_tokens", 0) for e in replies)
    if record.usage.input_tokens + record.usage.output_tokens < spent:
        out.append(f"run {record.run_id} counts fewer tokens than its journal's replies used ({spent})")
    if record.turns != len(replies):
        out.append(f"run {record.run_id} counted {record.turns} turns for {len(replies)} replies")
    return out


def _executions(chaos: Chaos, journals: dict[str, list[dict[str, Any]]], world: list[Execution]) -> list[str]:
    """What ran in the outside world, against what the journals recorded and the blows dealt."""
    out: list[str] = []
    begun: dict[str, list[Execution]] = {}
    for e in world:
        if e.phase == "begin":
            begun.setdefault(e.key, []).append(e)
    calls, recorded = _indexed(journals)
    for key, runs in begun.items():
        out += _ran(chaos, key, runs, calls.get(key), recorded.get(key))
    for key, token in recorded.items():
        if not any(e.token == token for e in begun.get(key, [])):
            out.append(f"{key}: its recorded execution {token} is not in the world")
    return out


def _indexed(journals: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, str], dict[str, str]]:
    """Each call's tool by key (run_id:call_id), and the token of the execution whose result was
    recorded, by key."""
    calls: dict[str, str] = {}
    recorded: dict[str, str] = {}
    for run_id, journal in journals.items():
        for entry in journal:
            if entry["type"] == "reply":
                calls |= {f"{run_id}:{p['id']}": p["name"] for p in entry["parts"] if p.get("type") == "call"}
            elif entry["type"] == "result" and (token := token_of(entry["text"])):
                recorded[f"{run_id}:{entry['call_id']}"] = token
    return calls, recorded


def _cut(blow: Blow, execution: Execution) -> bool:
    """True when `blow` may have kept `execution`'s result from the store: a blow to its process after
    it began, or the database down soon after it began (a result whose write failed past the runner's
    retries runs again, as after a crash)."""
    if blow.kind == "DB":
        return 0 < blow.at - execution.at < 30
    return blow.pid == execution.pid and blow.at > execution.at


def _ran(chaos: Chaos, key: str, runs: list[Execution], tool: str | None, token: str | None) -> list[str]:
    """The broken promises in one call's executions `runs` (in order): `tool` its journal's (None: no
    journal has it), `token` the recorded execution's (None: no result of an execution recorded)."""
    out = [f"{key} ran ({len(runs)}x) but no journal has that call"] if tool is None else []
    if tool == APPROVED and len(runs) > 1:
        out.append(f"approved call {key} ran {len(runs)} times: {runs}")
    for early in runs[:-1]:  # each execution but the last must have been cut by a blow
        if not any(_cut(b, early) for b in chaos.blows):
            out.append(f"{key} ran again after an execution in {early.pid} that no blow cut: {runs}")
    if token is not None and token != runs[-1].token:
        out.append(f"{key}: its recorded result came from {token}, yet it ran again: {runs}")
    return out


def terminal_stops(metrics: str) -> float:
    """The runs' real ends a process counted in `agent_stops_total` (not suspensions or shutdowns)."""
    return sum(
        float(line.rpartition(" ")[2])
        for line in metrics.splitlines()
        if line.startswith("agent_stops_total{") and not any(f'stop_reason="{r}"' in line for r in _NOT_ENDS)
    )


_NOT_ENDS = ("need_help", "cancelled")


def _metrics(chaos: Chaos, records: dict[str, RunRecord]) -> list[str]:
    out = []
    if chaos.pending_gauge_at_final != chaos.waiting_at_final:
        out.append(
            f"agent_help_pending said {chaos.pending_gauge_at_final}, the store {chaos.waiting_at_final}"
        )
    if chaos.unlisted:
        out.append(f"/pending and the store disagree on which runs wait: {sorted(chaos.unlisted)}")
    if (counted := sum(chaos.ends.values())) > len(records):
        out.append(f"the processes counted {counted} ends of {len(records)} runs: {chaos.ends}")
    stops = terminal_stops(chaos.final_metrics)
    if stops != len(chaos.left_at_final):
        out.append(f"the last process counted {stops} stops; {len(chaos.left_at_final)} runs ended under it")
    pending = metric(chaos.final_metrics, "agent_help_pending", agent="chaos", task_type="chaos")
    if pending not in (None, 0.0):
        out.append(f"agent_help_pending is {pending} once no run waits")
    return out

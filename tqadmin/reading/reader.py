"""The one read service: :class:`ProfileReader` reads one profile for every face that shows it.

The dashboard, the exporter and the read commands (``queues``, ``workers``, ``stats``, ``schedules``) ask it
for the parts they show and only present the :class:`~tqadmin.reading.reading.ProfileReading` they get, so
a figure is the same on every face. Written here once for all of them:

- the connections: the broker's admin face, the state store, its pauses and the cron lease, each opened on
  first use (in the reading thread), dropped after an error and opened again at the next read, all opened as
  readers (the embedded file is never created);
- the capability check: other frameworks' registries are read only where the plugin declares some;
- the fresh machine: a part in the embedded default file that nothing created yet reads as empty, and the
  reading carries the note saying where the file will be; a file the user named is a failure;
- the failure policy: any error of a part (a driver's, a bug's) makes that part unread with one masked line
  and the error, and never stops the others; the broker's listing failing leaves the registries on the
  same broker unread without a second wait (the store's workers failing, the telemetry window likewise);
- the wedged judgement of tqadmin's and other frameworks' workers, and tqadmin's cumulative task totals;
- the history: unless the profile is read-only (or the face records nothing), each reading's queues and
  workers' figures go to the profile's history (:mod:`tqadmin.reading.recording`), and spans are read back;
- the judges: what is derived from successive readings (the drain window of every queue, first) is applied
  to each reading in turn by a :class:`Judge`; the reader is the one place that sees every reading.

Thread-safe for the dashboard's two pollers (the broker's parts in one thread, the store's in another): the
store's connections and the history are used under one lock, never while the broker is waited for.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypedDict, TypeVar, Unpack

from tqadmin.config import Settings
from tqadmin.errors import NoDatabase
from tqadmin.files.access import Access
from tqadmin.frameworks.wedged import judge_foreign
from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.status import read_status
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.plugin.models import QueueListing
from tqadmin.plugin.registry import plugin_for_url
from tqadmin.plugin.workers import WorkerReading
from tqadmin.reading.connect import connect_admin, describe_error
from tqadmin.reading.drain import DEFAULT_WINDOW_S, DrainWindow
from tqadmin.reading.lazy import Lazy
from tqadmin.reading.reading import EVERY_PART, Part, Pauses, ProfileReading, Unread
from tqadmin.reading.recording import HistoryReader, HistoryRecorder, Span, SpanReading, history_name
from tqadmin.store.completion.base import StateStore, WorkerRecord
from tqadmin.store.cron.base import CronStore
from tqadmin.store.factory import open_cron_store, open_pauses, open_store
from tqadmin.store.pauses.base import Pause, PauseStore
from tqadmin.telemetry.ledger import WorkerLedger
from tqadmin.telemetry.snapshot import WorkerHistory
from tqadmin.telemetry.wedged import judge_all
from tqadmin.telemetry.window import window_stats

T = TypeVar("T")

WINDOW_S = 60.0
"""The telemetry window a face shows unless it asks for another: the last minute of every task type."""
CRON_NAMESPACE = "default"  # what ``tqadmin cron`` runs under unless told otherwise


class Judge(Protocol):
    """What is derived from successive readings of one profile (a window over them): given each reading in
    turn, it returns the reading with its judgement added (a listing's figures, or an entry of
    :attr:`~tqadmin.reading.reading.ProfileReading.judged`). Called under the reader's lock, one reading at
    a time, in the order they were read."""

    def judge(self, reading: ProfileReading) -> ProfileReading: ...


class DrainJudge:
    """Each queue's drain estimate (:class:`~tqadmin.reading.drain.DrainWindow`) over the listings read."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, window_s: float = DEFAULT_WINDOW_S
    ) -> None:
        self.window = DrainWindow(window_s, clock=clock)

    def judge(self, reading: ProfileReading) -> ProfileReading:
        if reading.listing is None:
            return reading
        return dataclasses.replace(reading, listing=self.window.apply(reading.listing))


@dataclasses.dataclass(frozen=True, slots=True)
class Connections:
    """How a reader connects, each to the caller's own where given (a test's fake broker, a store on a
    frozen clock); ``None``: the profile's, as the settings say."""

    admin: Callable[[], BrokerAdmin] | None = None
    store: Callable[[], StateStore] | None = None


class ReaderOptions(TypedDict, total=False):
    clock: Callable[[], float]
    connect: Connections
    record: bool
    history: HistoryReader | None
    window_s: float
    drain_window_s: float
    cron_namespace: str
    schedules: Sequence[Schedule]
    judges: Sequence[Judge]


class ProfileReader:
    """Reads one profile: :meth:`read` once per poll (or once, for a command), :meth:`close` at the end.

    ``record``: this face writes what it reads to the profile's history (never on a read-only profile).
    ``history``: the history spans are read from, when it is not the profile's (a seeded screen's).
    ``window_s``: the telemetry window; ``cron_namespace`` and ``schedules`` (a schedule file's) what the
    cron part reads; ``judges`` what is derived from successive readings, after the drain window (over
    ``drain_window_s``, 60 s unless said: ``tqadmin health`` gives its own window).
    """

    def __init__(self, settings: Settings, **options: Unpack[ReaderOptions]) -> None:
        clock = options.get("clock", time.time)
        connect = options.get("connect", Connections())
        record = options.get("record", False)
        window_s = options.get("window_s", WINDOW_S)
        cron_namespace = options.get("cron_namespace", CRON_NAMESPACE)
        self.settings = settings
        self.profile = history_name(settings.profile)
        self.window_s = window_s
        self._clock = clock
        self._schedules = tuple(options.get("schedules", ()))
        self._connect = connect
        timeout = settings.timeout_s
        self._admin: Lazy[BrokerAdmin] = Lazy(connect.admin or (lambda: connect_admin(settings)))
        self._store: Lazy[StateStore] = Lazy(
            connect.store or (lambda: open_store(settings.store_url, timeout_s=timeout, access=Access.READ))
        )
        self._pauses: Lazy[PauseStore] = Lazy(
            lambda: open_pauses(settings.store_url, timeout_s=timeout, access=Access.READ)
        )
        self._cron: Lazy[CronStore] = Lazy(
            lambda: open_cron_store(settings.store_url, cron_namespace, timeout, access=Access.READ)
        )
        self._ledger = WorkerLedger()
        self.recorder = HistoryRecorder.of(settings, clock) if record and not settings.read_only else None
        self.history = options.get("history") or (HistoryReader.of(settings, clock) if record else None)
        drain_s = options.get("drain_window_s", DEFAULT_WINDOW_S)
        self.judges: tuple[Judge, ...] = (DrainJudge(clock, drain_s), *options.get("judges", ()))
        self._store_lock = threading.Lock()  # the store's connections and the history
        self._judge_lock = threading.Lock()

    def held_admin(self) -> BrokerAdmin | None:
        """The admin connection the reader holds now, if any (a face borrowing one must not close it)."""
        return self._admin.value

    def read(self, parts: Iterable[Part] = EVERY_PART) -> ProfileReading:
        """One reading of ``parts``; never raises (a part that fails is unread, with why)."""
        asked = frozenset(parts)
        found: dict[str, Any] = {}
        unread: dict[Part, Unread] = {}
        notes: list[str] = []
        if Part.QUEUES in asked:
            self._read_queues(found, unread, notes)
        if Part.FRAMEWORKS in asked:
            self._read_frameworks(found, unread, notes)
        store_parts = asked & {Part.WORKERS, Part.TELEMETRY, Part.CRON, Part.PAUSES}
        if store_parts:
            with self._store_lock:
                self._read_store(store_parts, found, unread, notes)
        reading = ProfileReading(
            self.profile, self._clock(), asked, **found, unread=unread, note=notes[0] if notes else None
        )
        with self._judge_lock:
            for judge in self.judges:
                reading = judge.judge(reading)
        if self.recorder is not None and reading.listing is not None:
            with self._store_lock:
                self.recorder.record_queues(tuple(work_queues(reading.listing.queues)))
        return reading

    def read_span(self, span: Span, queues: Sequence[str], width: int) -> SpanReading | None:
        """``queues``' depths and the task types' activity over ``span`` of the history (``None`` when this
        reader has no history); raises what the store raises."""
        history = self.history
        if history is None:
            return None
        with self._store_lock:
            return history.read(span, queues, width)

    def stop_recording(self, timeout_s: float) -> bool:
        """No history write starts after this; waits up to ``timeout_s`` for one under way
        (:meth:`HistoryRecorder.stop`). ``True`` when none is under way any more."""
        return True if self.recorder is None else self.recorder.stop(timeout_s)

    def close(self) -> None:
        """Close every connection; waits for a read under way on the store (a connection closed under a
        running read crashes the SQLite driver)."""
        self._admin.close()
        with self._store_lock:
            for part in (self._store, self._cron, self._pauses):
                part.close()
            for history in (self.recorder, self.history):
                if history is not None:
                    history.close()

    # -- the parts -------------------------------------------------------------------------------------

    def _part(
        self, part: Part, read: Callable[[], T], empty: T, unread: dict[Part, Unread], notes: list[str]
    ) -> T | None:
        """``read()``; ``empty`` while its file is one nothing created yet (the note kept), ``None`` when it
        failed (the reason in ``unread``). Any exception counts: no answer may stop a poller's thread."""
        try:
            return read()
        except NoDatabase as missing:
            note = self.settings.not_created_yet(missing)
            if note is None:
                unread[part] = Unread(describe_error(missing), missing)
                return None
            notes.append(note)
            return empty
        except Exception as exc:  # a poller's thread must outlive any answer
            unread[part] = Unread(describe_error(exc), exc)
            return None

    def _read_queues(self, found: dict[str, Any], unread: dict[Part, Unread], notes: list[str]) -> None:
        def listed() -> tuple[QueueListing, Capabilities | None]:
            return self._admin.use(lambda admin: (admin.list_queues(), type(admin).capabilities))

        empty: tuple[QueueListing, Capabilities | None] = (QueueListing(()), None)
        got = self._part(Part.QUEUES, listed, empty, unread, notes)
        if got is not None:
            found["listing"], found["capabilities"] = got

    def _read_frameworks(self, found: dict[str, Any], unread: dict[Part, Unread], notes: list[str]) -> None:
        """Other frameworks' workers where the plugin reads their registries; none where it reads none.
        When the listing of the same broker just failed, they are unread for the same reason."""
        if Part.QUEUES in unread:
            unread[Part.FRAMEWORKS] = unread[Part.QUEUES]
            return

        def registries() -> WorkerReading:
            capabilities = found.get("capabilities")
            if not isinstance(capabilities, Capabilities):
                capabilities = self._capabilities()
            if not capabilities.worker_registries:
                return WorkerReading()
            return self._admin.use(lambda admin: admin.framework_workers())

        reading = self._part(Part.FRAMEWORKS, registries, WorkerReading(), unread, notes)
        if reading is None:
            return
        now, policy = self._clock(), self.settings.wedged
        found["frameworks"] = reading
        found["framework_verdicts"] = tuple(
            judge_foreign(w, policy, now, reading.tasks.get(w.framework)) for w in reading.workers
        )

    def _capabilities(self) -> Capabilities:
        """The plugin's declared capabilities: its class's, without connecting where the settings name it."""
        if self._connect.admin is None:
            return plugin_for_url(self.settings.broker_url).capabilities
        return self._admin.use(lambda admin: type(admin).capabilities)

    def _read_store(
        self, parts: frozenset[Part], found: dict[str, Any], unread: dict[Part, Unread], notes: list[str]
    ) -> None:
        if Part.WORKERS in parts:
            no_records: list[WorkerRecord] = []
            records = self._part(
                Part.WORKERS, lambda: self._store.use(lambda s: s.workers()), no_records, unread, notes
            )
            if records is not None:
                self._ledger.update(record.snapshot for record in records)
                found["workers"] = tuple(records)
                found["verdicts"] = tuple(
                    judge_all([(r.snapshot, r.age_s, r.alive) for r in records], self.settings.wedged)
                )
                if self.recorder is not None:
                    self.recorder.record_tasks(self._ledger.workers())
            found["tasks"] = self._ledger.totals()
        if Part.TELEMETRY in parts and Part.WORKERS in unread:  # the same store: not waited for twice
            unread[Part.TELEMETRY] = unread[Part.WORKERS]
        elif Part.TELEMETRY in parts:
            window = self.window_s
            no_history: tuple[float, list[WorkerHistory]] = (time.time(), [])
            history = self._part(
                Part.TELEMETRY,
                lambda: self._store.use(lambda s: s.history(window)),
                no_history,
                unread,
                notes,
            )
            if history is not None:
                found["telemetry"] = window_stats(history[0], window, history[1])
        if Part.CRON in parts:
            schedules = self._schedules
            found["cron"] = self._part(
                Part.CRON,
                lambda: self._cron.use(lambda s: read_status(s, schedules)),
                None,
                unread,
                notes,
            )
        if Part.PAUSES in parts:
            no_pauses: tuple[float, list[Pause]] = (time.time(), [])
            pauses = self._part(
                Part.PAUSES,
                lambda: self._pauses.use(lambda s: s.standing()),
                no_pauses,
                unread,
                notes,
            )
            if pauses is not None:
                found["pauses"] = Pauses(pauses[0], tuple(pauses[1]))

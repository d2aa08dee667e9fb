"""SoloGate: jobs run side by side, a suspect runs alone and is not starved by jobs arriving after it."""

import threading

from tqadmin.pipeline.gate import SoloGate


def _in_thread(gate: SoloGate, solo: bool, entered: list[str], name: str) -> threading.Thread:
    def enter() -> None:
        gate.enter(solo=solo)
        entered.append(name)

    thread = threading.Thread(target=enter, daemon=True)
    thread.start()
    return thread


def test_jobs_share_the_gate() -> None:
    gate = SoloGate()
    gate.enter(solo=False)
    gate.enter(solo=False)  # would block forever if it were exclusive
    gate.leave(solo=False)
    gate.leave(solo=False)


def test_a_suspect_waits_for_the_running_jobs_and_later_jobs_wait_for_the_suspect() -> None:
    gate = SoloGate()
    entered: list[str] = []
    gate.enter(solo=False)  # a job is running
    suspect = _in_thread(gate, True, entered, "suspect")
    while not gate._solo_waiting:  # the suspect is queued
        threading.Event().wait(0.01)
    later = _in_thread(gate, False, entered, "later")
    suspect.join(0.2)
    assert entered == []  # the running job still holds the gate; the later job queues behind the suspect
    gate.leave(solo=False)
    suspect.join()
    assert entered == ["suspect"]
    gate.leave(solo=True)
    later.join()
    assert entered == ["suspect", "later"]

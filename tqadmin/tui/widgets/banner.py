"""One line on top saying whether what you see is live: connection state, staleness and node alarms."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tqadmin.tui.model import human_duration
from tqadmin.tui.state import PollState
from tqadmin.tui.text import clean


def banner_text(state: PollState, now: float) -> Text:
    """Green when live, red with the error and the retry delay when the last poll failed."""
    text = Text(end="")
    if state.no_answer is not None and state.error is None:
        text.append(" ✖ no answer ", style="bold white on red")
        text.append(f" {clean(state.target)}")
    elif state.error is None and state.last_ok is not None:
        text.append(" ● live ", style="bold black on green")
        text.append(f" {clean(state.target)}  polled {human_duration(now - state.last_ok)} ago")
        if state.note:
            text.append(f"  {clean(state.note)}", style="bold")
    elif state.error is None:
        text.append(" ○ connecting ", style="bold black on yellow")
        text.append(f" {clean(state.target)}")
    else:
        text.append(" ✖ broker unreachable ", style="bold white on red")
    # The profile's nature comes before any error text, so a long error never pushes it off screen.
    if state.read_only:
        text.append(" ")
        text.append(" READ-ONLY ", style="bold black on cyan")
    if state.production:
        text.append(" ")
        text.append(" PRODUCTION ", style="bold white on dark_red")
    if state.error is not None:
        text.append(f" {clean(state.error)}", style="red")
        text.append(f"  retry in {human_duration(state.retry_in_s)} (attempt {state.failures})")
    elif state.no_answer is not None:
        text.append(f"  {clean(state.no_answer)}", style="red")
    if state.stale and state.last_ok is not None:
        text.append(f"  showing data from {human_duration(now - state.last_ok)} ago (stale)", style="bold")
    for alarm in state.alarms:
        text.append("  ")
        text.append(f" ALARM {clean(alarm.kind)} on {clean(alarm.node)} ", style="bold white on red")
        if alarm.detail:
            text.append(f" {clean(alarm.detail)}")
    return text


class Banner(Static):
    """Re-rendered after every poll, success or failure."""

    def show(self, state: PollState, now: float) -> None:
        self.set_class(state.stale, "down")
        self.set_class(bool(state.alarms), "alarm")
        self.update(banner_text(state, now))

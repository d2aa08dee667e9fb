"""Switch profiles, with read-only and production ones marked so nobody writes to prod by accident."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tqadmin.config import Settings, load_config_file, profile_names
from tqadmin.show.masking import mask_url
from tqadmin.tui.text import clean


def profile_label(name: str, table: dict[str, object], current: str | None) -> Text:
    text = Text("● " if name == current else "  ", style="green", end="")
    text.append(clean(name), style="bold")
    if table.get("production"):
        text.append("  PRODUCTION", style="bold white on dark_red")
    if table.get("read_only"):
        text.append("  read-only", style="bold cyan")
    else:
        text.append("  writable", style="yellow" if table.get("production") else "dim")
    broker = table.get("broker")
    if isinstance(broker, str):
        text.append(f"  {clean(mask_url(broker))}", style="dim")
    return text


class ProfilesScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel"),
        Binding("j", "move('down')", "Down", show=False),
        Binding("k", "move('up')", "Up", show=False),
    ]

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        config = load_config_file(settings.config_path) if settings.config_path else {}
        profiles = config.get("profiles", {})
        self.names = profile_names(config)
        self.tables = {n: profiles[n] if isinstance(profiles.get(n), dict) else {} for n in self.names}

    def compose(self) -> ComposeResult:
        with Vertical(id="profiles"):
            yield Static(Text("switch profile", style="bold"))
            if not self.names:
                yield Static(
                    Text(
                        f"no profiles in {self.settings.config_path}; add [profiles.NAME] tables", style="dim"
                    )
                )
            options = [
                Option(profile_label(n, self.tables[n], self.settings.profile), id=n) for n in self.names
            ]
            yield OptionList(*options, id="profile-list")
            yield Static(Text("Enter switches · Esc cancels", style="dim"))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_move(self, direction: str) -> None:
        options = self.query_one(OptionList)
        options.action_cursor_down() if direction == "down" else options.action_cursor_up()

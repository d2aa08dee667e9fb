"""Resolve the settings of one run from flags, environment and a TOML profile.

Precedence is fixed by interface.md: flags beat environment beats profile beats built-in defaults. Secrets
can live in the config file or the environment, so no one ever has to type a password on a command line
(where ``ps`` and shell history would keep it).
"""

from __future__ import annotations

import difflib
import math
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqadmin.errors import ConfigError, NoDatabase, ReadOnly
from tqadmin.files import audit
from tqadmin.files.sqlite import path_of
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.registry import installed_options, plugin_for_url
from tqadmin.show.masking import mask_url, masked_repr
from tqadmin.telemetry.verdict import DEFAULT_WINDOW_S
from tqadmin.telemetry.wedged import WedgePolicy

EMBEDDED_FILE = Path("tqadmin") / "tqadmin.db"
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_CONFIG_PATH = Path("~/.config/tqadmin/config.toml")
DEFAULT_AUDIT_LOG = Path("~/.local/state/tqadmin/audit.jsonl")


def embedded_url(environ: Mapping[str, str] | None = None) -> str:
    """The default broker and state store when nothing is configured: one SQLite file,
    ``$XDG_STATE_HOME/tqadmin/tqadmin.db`` (``~/.local/state/tqadmin/tqadmin.db`` without it)."""
    env = os.environ if environ is None else environ
    state = Path(env.get("XDG_STATE_HOME") or Path(env.get("HOME") or "~") / ".local" / "state").expanduser()
    return f"sqlite:///{state / EMBEDDED_FILE}"


THRESHOLD_KEYS = frozenset(
    {
        "depth_threshold",
        "oldest_age_threshold_s",
        "dlq_threshold",
        "dlq_age_threshold_s",
        "failure_rate_threshold",
        "pause_threshold_s",
    }
)
WEDGED_KEYS = frozenset({"wedged_factor", "wedged_min_s", "wedged_no_history_s", "wedged_intake_s"})
PROFILE_KEYS = frozenset(
    {
        "broker",
        "store",
        "read_only",
        "production",
        "timeout",
        "audit_log",
        "thresholds",
        "celery_events",
        "stall_after_s",
        *THRESHOLD_KEYS,
        *WEDGED_KEYS,
    }
)
TOP_LEVEL_KEYS = frozenset({"default_profile", "profiles"})


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Alert thresholds: a queue over any of them is highlighted in the TUI."""

    depth: int | None = None
    oldest_age_s: float | None = None
    dlq_messages: int | None = 1
    dlq_oldest_age_s: float | None = 3600.0  # a dead letter an hour old has waited long enough for a look
    failure_rate: float | None = 0.05  # of a task type's runs over the telemetry window
    pause_s: float | None = 3600.0  # a pause standing longer pages (TqadminPauseLong): one forgotten


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a command needs to know about where to connect and what it may do."""

    profile: str | None = None
    broker_url: str = field(default_factory=embedded_url)
    broker_options: Mapping[str, str] = field(default_factory=dict)
    store_url: str = field(default_factory=embedded_url)
    read_only: bool = False
    production: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    audit_log: Path = field(default_factory=DEFAULT_AUDIT_LOG.expanduser)
    config_path: Path | None = None
    celery_events: bool = False  # listen to Celery's task events (docs/frameworks.md); opt-in
    thresholds: Thresholds = field(default_factory=Thresholds)
    wedged: WedgePolicy = field(default_factory=WedgePolicy)  # when a live worker counts as wedged
    stall_after_s: float = DEFAULT_WINDOW_S  # the window of each queue's verdict (docs/health.md)
    verbose: bool = False
    explicit_broker: bool = False
    explicit_store: bool = False

    def __repr__(self) -> str:
        return masked_repr(self)

    def not_created_yet(self, missing: NoDatabase) -> str | None:
        """What a read shows instead of failing when ``missing`` is the embedded default file that nothing
        has created yet (a fresh machine: the normal state, not an error); ``None`` when the user named the
        file (``--broker``, ``--store``, environment, profile), where a missing file is likely a typo."""
        defaults = [
            url
            for url, named in ((self.broker_url, self.explicit_broker), (self.store_url, self.explicit_store))
            if not named and url.startswith("sqlite:")
        ]
        if not any(path_of(url) == missing.path for url in defaults):
            return None
        return (
            f"nothing here yet: {missing.path} does not exist; tqadmin demo, tqadmin publish or a worker"
            " creates it"
        )

    def require_writable(self, action: str) -> None:
        """Raise before anything is sent when this profile may not write (:class:`ReadOnly`) or the write
        could not be audited."""
        self.refuse_if_read_only(action)
        audit.ensure_writable(self.audit_log)

    def refuse_if_read_only(self, action: str) -> None:
        """Raise :class:`ReadOnly` when this profile may not write: alone for a writer that keeps no audit
        record (a worker), which an unwritable audit log must not stop."""
        if self.read_only:
            raise ReadOnly(action, self.profile)

    def broker_config(self) -> BrokerConfig:
        """What the broker plugin connects with: the URL, the timeout and its own options."""
        return BrokerConfig(
            url=self.broker_url,
            timeout_s=self.timeout_s,
            options=dict(self.broker_options),
            celery_events=self.celery_events,
            read_only=self.read_only,
        )

    def describe(self) -> str:
        """One line naming the profile and broker, with credentials masked."""
        name = self.profile or "default"
        flags = " (read-only)" if self.read_only else ""
        return f"{name}{flags}: {mask_url(self.broker_url)}"


@dataclass(frozen=True, slots=True)
class Overrides:
    """Values given as flags; ``None`` means "not given" so lower layers may fill it."""

    profile: str | None = None
    broker_url: str | None = None
    broker_options: Mapping[str, str] = field(default_factory=dict)  # plugin option name -> flag value
    store_url: str | None = None
    config_path: str | None = None
    read_only: bool = False
    timeout_s: float | None = None
    verbose: bool = False

    def __repr__(self) -> str:
        return masked_repr(self)


def plugin_environment(settings: Settings) -> dict[str, str]:
    """The environment that hands this run's broker plugin options to a child process (a demo worker)."""
    return {
        option.env: settings.broker_options[option.name]
        for option in plugin_for_url(settings.broker_url).options
        if option.env and option.name in settings.broker_options
    }


def load_config_file(path: Path) -> dict[str, Any]:
    """Read the TOML config; a missing default file is an empty config, a broken one a clear error."""
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None


def profile_names(config: Mapping[str, Any]) -> list[str]:
    """The profile names defined in a loaded config, in file order."""
    profiles = config.get("profiles", {})
    return list(profiles) if isinstance(profiles, dict) else []


def resolve(overrides: Overrides, environ: Mapping[str, str] | None = None) -> Settings:
    """Merge flags, environment and the chosen profile into :class:`Settings`."""
    env = os.environ if environ is None else environ
    explicit_config = overrides.config_path or env.get("TQADMIN_CONFIG")
    config_path = Path(explicit_config or DEFAULT_CONFIG_PATH).expanduser()
    if explicit_config and not config_path.exists():
        raise ConfigError(f"config file {config_path} does not exist (set by --config or TQADMIN_CONFIG)")
    config = load_config_file(config_path)
    check_keys(config, config_path)

    profile_name = overrides.profile or env.get("TQADMIN_PROFILE") or config.get("default_profile")
    profile = _profile_table(config, profile_name, config_path)

    def pick(flag: str | None, env_name: str, key: str) -> str | None:
        value = flag or env.get(env_name) or profile.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"profile {profile_name!r}: {key} must be a string")
        return value

    broker = pick(overrides.broker_url, "TQADMIN_BROKER_URL", "broker")
    broker_url = broker or embedded_url(env)
    options: dict[str, str] = {}
    for option in plugin_for_url(broker_url).options:
        value = pick(overrides.broker_options.get(option.name), option.env or "", option.name)
        if value:
            options[option.name] = value
    read_only = overrides.read_only or _truthy(env.get("TQADMIN_READ_ONLY")) or _flag(profile, "read_only")
    timeout = (
        overrides.timeout_s if overrides.timeout_s is not None else profile.get("timeout", DEFAULT_TIMEOUT_S)
    )
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError("timeout must be a positive number of seconds")
    audit = env.get("TQADMIN_AUDIT_LOG") or profile.get("audit_log") or str(DEFAULT_AUDIT_LOG)
    store = pick(overrides.store_url, "TQADMIN_STORE_URL", "store")
    return Settings(
        profile=profile_name,
        broker_url=broker_url,
        broker_options=options,
        store_url=store or embedded_url(env),
        read_only=read_only,
        production=_flag(profile, "production"),
        celery_events=_truthy(env.get("TQADMIN_CELERY_EVENTS")) or _flag(profile, "celery_events"),
        timeout_s=float(timeout),
        audit_log=Path(audit).expanduser(),
        config_path=config_path,
        thresholds=_thresholds(profile.get("thresholds", profile)),
        wedged=_wedge_policy(profile),
        stall_after_s=_positive(profile, "stall_after_s", DEFAULT_WINDOW_S),
        verbose=overrides.verbose,
        explicit_broker=broker is not None,
        explicit_store=store is not None,
    )


def check_keys(config: Mapping[str, Any], path: Path) -> None:
    """Refuse a key nobody reads: a typo such as ``read_onyl = true`` would otherwise leave a production
    profile writable without a word. Plugin options count as known keys (any installed plugin's)."""
    for key in config:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(_unknown(key, "at the top level", path, TOP_LEVEL_KEYS))
    profiles = config.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"'profiles' in {path} must be a table of [profiles.NAME] tables")
    known = PROFILE_KEYS | {option.name for option in installed_options()}
    for name, table in profiles.items():
        if not isinstance(table, dict):
            raise ConfigError(f"[profiles.{name}] in {path} must be a table")
        for key, value in table.items():
            if key not in known:
                raise ConfigError(_unknown(key, f"in [profiles.{name}]", path, known))
            if key == "thresholds":
                if not isinstance(value, dict):
                    raise ConfigError(f"[profiles.{name}.thresholds] in {path} must be a table")
                for inner in value:
                    if inner not in THRESHOLD_KEYS:
                        raise ConfigError(
                            _unknown(inner, f"in [profiles.{name}.thresholds]", path, THRESHOLD_KEYS)
                        )


def _unknown(key: str, where: str, path: Path, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(sorted(known))})"
    return f"unknown key {key!r} {where} of {path}{hint}: fix or remove it"


def _profile_table(config: Mapping[str, Any], name: str | None, path: Path) -> Mapping[str, Any]:
    if name is None:
        return {}
    profiles = config.get("profiles", {})
    if not isinstance(profiles, dict) or name not in profiles:
        known = ", ".join(profile_names(config)) or "none"
        raise ConfigError(f"profile {name!r} is not defined in {path} (defined: {known})")
    table = profiles[name]
    if not isinstance(table, dict):
        raise ConfigError(f"[profiles.{name}] in {path} must be a table")
    return table


def _thresholds(table: Mapping[str, Any]) -> Thresholds:
    """The profile's thresholds, each absent one at its documented default (:class:`Thresholds`), so the
    dashboard and the alert rules apply the same ones."""
    defaults = Thresholds()

    def number(key: str, default: float | None) -> float | None:
        return _number(table, key, default, "threshold")

    depth = number("depth_threshold", defaults.depth)
    dlq = number("dlq_threshold", defaults.dlq_messages)
    return Thresholds(
        depth=int(depth) if depth is not None else None,
        oldest_age_s=number("oldest_age_threshold_s", defaults.oldest_age_s),
        dlq_messages=int(dlq) if dlq is not None else None,
        dlq_oldest_age_s=number("dlq_age_threshold_s", defaults.dlq_oldest_age_s),
        failure_rate=number("failure_rate_threshold", defaults.failure_rate),
        pause_s=number("pause_threshold_s", defaults.pause_s),
    )


def _flag(profile: Mapping[str, Any], key: str) -> bool:
    """A true/false key of a profile; ``read_only = "no"`` is refused rather than read as true."""
    value = profile.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false (without quotes), not {value!r}")
    return value


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in {"1", "true", "yes", "on"}


def _number(table: Mapping[str, Any], key: str, default: float | None, what: str) -> float | None:
    """``table[key]`` as a float, ``default`` when absent; anything but a finite number is refused."""
    value = table.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{what} {key} must be a finite number, not {value!r}")
    return float(value)


def _positive(profile: Mapping[str, Any], key: str, default: float) -> float:
    """A profile's positive number of seconds (or factor), ``default`` when absent."""
    value = _number(profile, key, default, "setting")
    if value is None or value <= 0:
        raise ConfigError(f"setting {key} must be a positive number, not {profile.get(key)!r}")
    return value


def _wedge_policy(profile: Mapping[str, Any]) -> WedgePolicy:
    """The profile's ``wedged_*`` keys, each absent one at its documented default (:class:`WedgePolicy`)."""
    defaults = WedgePolicy()

    def positive(key: str, default: float) -> float:
        return _positive(profile, key, default)

    return WedgePolicy(
        factor=positive("wedged_factor", defaults.factor),
        min_s=positive("wedged_min_s", defaults.min_s),
        no_history_s=positive("wedged_no_history_s", defaults.no_history_s),
        intake_s=positive("wedged_intake_s", defaults.intake_s),
    )

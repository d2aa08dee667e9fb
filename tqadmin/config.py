"""Resolve the settings of one run from flags, environment and a TOML profile.

Precedence is fixed by INTERFACE.md: flags beat environment beats profile beats built-in defaults. Secrets
can live in the config file or the environment, so no one ever has to type a password on a command line
(where ``ps`` and shell history would keep it).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqadmin import audit
from tqadmin.errors import ConfigError, ReadOnly
from tqadmin.masking import mask_url, masked_repr

DEFAULT_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672/%2F"
DEFAULT_STORE_URL = "redis://127.0.0.1:6379/0"
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_CONFIG_PATH = Path("~/.config/tqadmin/config.toml")
DEFAULT_AUDIT_LOG = Path("~/.local/state/tqadmin/audit.jsonl")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Alert thresholds: a queue over any of them is highlighted in the TUI."""

    depth: int | None = None
    oldest_age_s: float | None = None
    dlq_messages: int | None = 1
    failure_rate: float | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a command needs to know about where to connect and what it may do."""

    profile: str | None = None
    broker_url: str = DEFAULT_BROKER_URL
    management_url: str | None = None
    store_url: str = DEFAULT_STORE_URL
    read_only: bool = False
    production: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S
    audit_log: Path = field(default_factory=DEFAULT_AUDIT_LOG.expanduser)
    config_path: Path | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    verbose: bool = False
    explicit_broker: bool = False

    def __repr__(self) -> str:
        return masked_repr(self)

    def require_writable(self, action: str) -> None:
        """Raise before anything is sent when this profile may not write (:class:`ReadOnly`) or the write
        could not be audited."""
        if self.read_only:
            raise ReadOnly(action, self.profile)
        audit.ensure_writable(self.audit_log)

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
    management_url: str | None = None
    store_url: str | None = None
    config_path: str | None = None
    read_only: bool = False
    timeout_s: float | None = None
    verbose: bool = False

    def __repr__(self) -> str:
        return masked_repr(self)


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

    profile_name = overrides.profile or env.get("TQADMIN_PROFILE") or config.get("default_profile")
    profile = _profile_table(config, profile_name, config_path)

    def pick(flag: str | None, env_name: str, key: str) -> str | None:
        value = flag or env.get(env_name) or profile.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"profile {profile_name!r}: {key} must be a string")
        return value

    broker = pick(overrides.broker_url, "TQADMIN_BROKER_URL", "broker")
    read_only = overrides.read_only or _truthy(env.get("TQADMIN_READ_ONLY")) or bool(profile.get("read_only"))
    timeout = (
        overrides.timeout_s if overrides.timeout_s is not None else profile.get("timeout", DEFAULT_TIMEOUT_S)
    )
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError("timeout must be a positive number of seconds")
    audit = env.get("TQADMIN_AUDIT_LOG") or profile.get("audit_log") or str(DEFAULT_AUDIT_LOG)
    return Settings(
        profile=profile_name,
        broker_url=broker or DEFAULT_BROKER_URL,
        management_url=pick(overrides.management_url, "TQADMIN_MANAGEMENT_URL", "management_url"),
        store_url=pick(overrides.store_url, "TQADMIN_STORE_URL", "store") or DEFAULT_STORE_URL,
        read_only=read_only,
        production=bool(profile.get("production", False)),
        timeout_s=float(timeout),
        audit_log=Path(audit).expanduser(),
        config_path=config_path,
        thresholds=_thresholds(profile.get("thresholds", profile)),
        verbose=overrides.verbose,
        explicit_broker=broker is not None,
    )


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
    def number(key: str) -> float | None:
        value = table.get(key)
        if value is None:
            return None
        if not isinstance(value, int | float):
            raise ConfigError(f"threshold {key} must be a number")
        return float(value)

    depth = number("depth_threshold")
    dlq = number("dlq_threshold")
    return Thresholds(
        depth=int(depth) if depth is not None else None,
        oldest_age_s=number("oldest_age_threshold_s"),
        dlq_messages=int(dlq) if dlq is not None else 1,
        failure_rate=number("failure_rate_threshold"),
    )


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in {"1", "true", "yes", "on"}

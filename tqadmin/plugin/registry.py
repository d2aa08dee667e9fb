"""Find broker plugins through the ``tqadmin.brokers`` entry-point group.

A plugin's module imports no driver (the contract's rule, checked by a layering test), so loading the plugin
classes to read the options they declare stays cheap, and a plugin whose driver is not installed does not
break the others: the driver is imported when a face is first opened.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points
from urllib.parse import urlsplit

from tqadmin.errors import ConfigError
from tqadmin.plugin.base import BrokerPlugin, PluginOption
from tqadmin.plugin.capabilities import PublishOption
from tqadmin.show.masking import mask_url

GROUP = "tqadmin.brokers"


@functools.cache
def available_schemes() -> dict[str, EntryPoint]:
    """URL scheme -> entry point, for every installed plugin. Read once per process: each read scans every
    installed distribution, and the CLI asks once per command while it builds its parser."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def plugin_for_url(url: str) -> BrokerPlugin:
    """Load the plugin that handles ``url``'s scheme, or explain which schemes exist."""
    scheme = urlsplit(url).scheme.lower()
    schemes = available_schemes()
    if scheme not in schemes:
        known = ", ".join(sorted(f"{s}://" for s in schemes)) or "none installed"
        raise ConfigError(
            f"no broker plugin for {mask_url(url)!r} (scheme {scheme or '?'}://); known: {known}"
        )
    return _load(schemes[scheme])()


def installed_plugins() -> list[type[BrokerPlugin]]:
    """Every installed plugin class, once each (a plugin may serve several schemes), in a stable order; one
    that cannot be loaded is left out: it declares nothing."""
    found: dict[type[BrokerPlugin], None] = {}
    for entry in sorted(available_schemes().values(), key=lambda e: e.name):
        try:
            found.setdefault(_load(entry))
        except ConfigError:
            continue
    return list(found)


def installed_options() -> list[PluginOption]:
    """Every option some installed plugin declares, once each, in a stable order (for the CLI's flags and
    the config file's keys)."""
    found: dict[str, PluginOption] = {}
    for plugin_class in installed_plugins():
        for option in plugin_class.options:
            found.setdefault(option.name, option)
    return list(found.values())


def installed_publish_options() -> list[PublishOption]:
    """Every publish option some installed plugin's transport declares, once each (``tqadmin publish``'s
    flags); the publish itself refuses one its broker does not declare."""
    found: dict[str, PublishOption] = {}
    for plugin_class in installed_plugins():
        if plugin_class.transport_capabilities is not None:
            for option in plugin_class.transport_capabilities.publish_options:
                found.setdefault(option.name, option)
    return list(found.values())


def driver_log_levels(verbose: bool) -> dict[str, int]:
    """The level each installed plugin asks for its driver's loggers, with ``-v`` or without."""
    return {
        logger.name: logger.level_for(verbose)
        for plugin_class in installed_plugins()
        for logger in plugin_class.driver_loggers
    }


@functools.cache
def _load(entry: EntryPoint) -> type[BrokerPlugin]:
    try:
        plugin_class = entry.load()
    except ImportError as exc:
        missing = exc.name or "a driver"
        raise ConfigError(
            f"the broker plugin for {entry.name}:// needs {missing}, which is not installed "
            f"(pip install 'tqadmin[{entry.value.split(':')[0].removeprefix('tqadmin_')}]')"
        ) from None
    if not (isinstance(plugin_class, type) and issubclass(plugin_class, BrokerPlugin)):
        raise ConfigError(f"entry point {entry.name} = {entry.value} is not a tqadmin BrokerPlugin")
    return plugin_class

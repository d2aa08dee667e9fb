"""Find broker plugins through the ``tqadmin.brokers`` entry-point group, without importing them.

Listing reads only package metadata, so ``tqadmin --help`` stays fast and a plugin whose driver is not
installed does not break the others; a plugin is imported when a URL with its scheme is first used.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from urllib.parse import urlsplit

from tqadmin.errors import ConfigError
from tqadmin.masking import mask_url
from tqadmin.plugin.base import BrokerPlugin

GROUP = "tqadmin.brokers"


def available_schemes() -> dict[str, EntryPoint]:
    """URL scheme -> entry point, for every installed plugin."""
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
    entry = schemes[scheme]
    try:
        plugin_class = entry.load()
    except ImportError as exc:
        missing = exc.name or "a driver"
        raise ConfigError(
            f"the broker plugin for {scheme}:// needs {missing}, which is not installed "
            f"(pip install 'tqadmin[{entry.value.split(':')[0].removeprefix('tqadmin_')}]')"
        ) from None
    if not (isinstance(plugin_class, type) and issubclass(plugin_class, BrokerPlugin)):
        raise ConfigError(f"entry point {entry.name} = {entry.value} is not a tqadmin BrokerPlugin")
    return plugin_class()

"""The ``?prefix=`` query parameter every state-store and broker URL may carry: the namespace of
tqadmin's own keys and tables, taken off the URL before a driver sees it.
"""

from urllib.parse import parse_qsl, urlencode


def split_prefix(url: str) -> tuple[str, str | None]:
    """``url`` without its ``prefix`` query parameter, and that parameter's value (None when absent)."""
    base, _, query_text = url.partition("?")
    query = parse_qsl(query_text, keep_blank_values=True)
    prefix = next((value for key, value in query if key == "prefix"), None)
    if prefix is None:
        return url, None
    rest = urlencode([(key, value) for key, value in query if key != "prefix"])
    return (f"{base}?{rest}" if rest else base), prefix

"""The Textual dashboard; the only package that imports Textual (``tqadmin`` itself never imports it)."""

from tqadmin.tui.app import TqadminApp

__all__ = ["TqadminApp"]

"""icml25: runnable, tested reference implementations of ICML 2025 papers.

Each paper lives in ``icml25.papers.<slug>``; ``icml25 list`` shows them all.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("icml25")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

"""The ``icml25`` command's entry point: SIGINT and SIGTERM are handled from the first instruction.

Importing the command line (click, rich, the registry) takes a moment; a signal in that moment would
otherwise end the process with a traceback (SIGINT) or silently with status 143 (SIGTERM). Until the
command takes over (:func:`icml25.cli.install_signal_handlers`), either signal prints one line and
exits with status 130: nothing has been opened or written yet.
"""

from __future__ import annotations

import os
import signal
import sys


def _early(signum: int, frame: object) -> None:
    sys.stderr.write(f"interrupted ({signal.Signals(signum).name}) while starting: nothing was run\n")
    os._exit(130)


def install_early_handlers() -> None:
    """Exit 130 with one line on SIGINT or SIGTERM (until the command installs its own handlers)."""
    signal.signal(signal.SIGINT, _early)
    signal.signal(signal.SIGTERM, _early)


def main() -> None:
    install_early_handlers()
    from icml25.cli import main as cli_main

    cli_main()


if __name__ == "__main__":  # pragma: no cover
    main()

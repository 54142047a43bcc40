"""Tiny copies of the paper's data files in their real formats, for the experiments that run only on them.

An experiment with a ``data_setting`` (it runs only on the paper's own data, which no package ships) is skipped
by ``reproduce`` while that setting is empty; the suite's batteries run it on the files written here instead.
Each paper has its own module here (``paper_files/<slug>.py``) with a dict ``FILES``: experiment name -> a function
that writes the experiment's files into a folder and returns the ``--set`` values that point the experiment at
them. :data:`PAPER_DATA` gathers them; ``tests/core/test_every_experiment.py`` checks that every such experiment has
one. The files hold made-up values in the real layouts (file names, keys, column names and order, dtypes).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

PAPER_DATA: dict[tuple[str, str], Callable[[Path], dict[str, str]]] = {
    (info.name, experiment): writer
    for info in pkgutil.iter_modules(__path__)
    for experiment, writer in importlib.import_module(f"{__name__}.{info.name}").FILES.items()
}
"""(paper, experiment) -> writes the experiment's files into a folder and returns its ``--set`` values."""

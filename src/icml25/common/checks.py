"""Argument checks shared by the papers' training loops."""

from __future__ import annotations


def check_recipe(steps: int, batch: int, lr: float) -> None:
    """Clear errors for a training recipe's step count (>= 0), batch size (>= 1) and learning rate (> 0)."""
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if int(batch) != batch or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if not 0 < lr < float("inf"):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")

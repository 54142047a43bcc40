"""Declarative range checks shared by method configs, experiment configs and the papers' training loops.

Method modules import these instead of writing their own ``_check_positive`` helpers, and without
importing :mod:`icml25.core` (a method never depends on the reproduction machinery).
:class:`ConfigError` is a :class:`ValueError`, so callers that catch ``ValueError`` keep working.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any


class ConfigError(ValueError):
    """A setting (a config field, a preset, an override or a method's argument) outside its valid range."""


def _items(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _is_int(v: Any) -> bool:  # noqa: ANN401
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_finite(v: Any) -> bool:  # noqa: ANN401
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "integer": (_is_int, "an integer"),
    "finite": (_is_finite, "a finite number"),
    "positive": (lambda v: v > 0, "> 0"),
    "nonnegative": (lambda v: v >= 0, ">= 0"),
    "fraction": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "open_fraction": (lambda v: 0 < v < 1, "in (0, 1)"),
}
"""The rules that name settings, with the test each element must pass and how the message states it."""


def _bounded(rule: str, bound: Any) -> tuple[Callable[[Any], bool], str]:  # noqa: ANN401
    if rule == "at_least":
        return (lambda v: v >= bound), f">= {bound}"
    if rule == "at_most":
        return (lambda v: v <= bound), f"<= {bound:g}"
    allowed = tuple(bound)
    return (lambda v: v in allowed), f"one of {', '.join(map(repr, allowed))}"


def check_ranges(where: str, values: Mapping[str, Any], **rules: Any) -> None:  # noqa: ANN401
    """Check declared ranges of named ``values``; raise :class:`ConfigError` on the first violation.

    ``where`` names the owner in the message (``check_ranges("OMDPD", {"eta": 0}, positive=("eta",))``
    raises ``OMDPD.eta must be > 0, got 0``). A tuple or list value is checked element-wise; ``None`` (an
    optional setting left unset) passes every rule; NaN fails every bound. The rules:

    * ``integer``, ``finite`` (not NaN or infinite), ``positive`` (> 0), ``nonnegative`` (>= 0),
      ``fraction`` (in [0, 1]), ``open_fraction`` (in (0, 1)), ``nonempty`` (a non-empty tuple,
      list or string): each takes the names it applies to;
    * ``at_least`` / ``at_most``: ``{name: bound}``; ``choices``: ``{name: allowed values}``.

    A rule given ``True`` instead of names applies to every value:
    ``check_ranges("pabi_sigma", {"C0": C0, "C1": C1}, finite=True, positive=True)``.
    """
    rules = {rule: tuple(values) if names is True else names for rule, names in rules.items()}
    checks: list[tuple[str, Callable[[Any], bool], str]] = []
    for rule, names in rules.items():
        if rule in RULES:
            checks.extend((name, *RULES[rule]) for name in names)
        elif rule in ("at_least", "at_most", "choices"):
            checks.extend((name, *_bounded(rule, bound)) for name, bound in (names or {}).items())
        elif rule != "nonempty":
            valid = ", ".join([*RULES, "nonempty", "at_least", "at_most", "choices"])
            raise TypeError(f"check_ranges: unknown rule {rule!r}; valid: {valid}")
    for name, ok, text in checks:
        value = values[name]
        if any(item is not None and not _passes(ok, item) for item in _items(value)):
            raise ConfigError(f"{where}.{name} must be {text}, got {value!r}")
    for name in rules.get("nonempty", ()):
        value = values[name]
        if value is not None and len(value) == 0:
            raise ConfigError(f"{where}.{name} must be non-empty, got {value!r}")


def _passes(ok: Callable[[Any], bool], item: Any) -> bool:  # noqa: ANN401
    try:
        return bool(ok(item))
    except TypeError:  # a string where a number belongs
        return False


class _Fields(Mapping[str, Any]):
    """An object's attributes as a read-only mapping (only the names asked for are read)."""

    def __init__(self, obj: Any) -> None:  # noqa: ANN401
        self._obj = obj

    def __getitem__(self, name: str) -> Any:  # noqa: ANN401
        try:
            return getattr(self._obj, name)
        except AttributeError:
            raise KeyError(name) from None

    def __iter__(self):  # noqa: ANN204
        return iter(vars(self._obj))

    def __len__(self) -> int:
        return len(vars(self._obj))


def check_fields(cfg: Any, **ranges: Any) -> None:  # noqa: ANN401
    """:func:`check_ranges` on the fields of a config object (an experiment's or a method's dataclass).

    ``check_fields(self, positive=("lr", "batch_size"), fraction=("gamma",))`` in a config's
    ``__post_init__`` (or ``validate``) is the whole validation of most configs.
    """
    check_ranges(type(cfg).__name__, _Fields(cfg), **ranges)


def check_recipe(steps: int, batch: int, lr: float) -> None:
    """Clear errors for a training recipe's step count (>= 0), batch size (>= 1) and learning rate (> 0)."""
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    if int(batch) != batch or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if not 0 < lr < float("inf"):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")

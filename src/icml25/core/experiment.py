"""Experiments: a pure function of (config, seed) returning a flat dict of metrics.

Every paper's reproduction is a list of :class:`Experiment`. Each has a config
dataclass (subclass of :class:`ExperimentConfig`) and three presets:

* ``smoke``: seconds; what the test suite runs;
* ``quick``: at most a few minutes on 2 CPU cores; what ``icml25 reproduce`` runs;
* ``full``: the paper's scale; may need a GPU or data the user provides.

A preset is a set of field overrides on the dataclass defaults; ``--set key=value``
overrides fields on top of the preset.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRESETS: tuple[str, ...] = ("smoke", "quick", "full")

Metrics = dict[str, Any]
"""Flat mapping of metric name to a float (or int/bool), or a short list of floats."""

ProgressFn = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    """The default progress callback: ignore progress reports."""


class ConfigError(ValueError):
    """A preset, override key or override value that the experiment does not accept."""


@dataclass
class ExperimentConfig:
    """Base class of every experiment config.

    Subclasses are dataclasses whose every field has a default and a one-line
    docstring-style comment. ``device`` selects where tensors live for experiments
    that use PyTorch (``cpu`` by default, ``cuda`` when asked and available).
    """

    device: str = "cpu"
    """Where tensors live: ``cpu`` or ``cuda`` (PyTorch experiments only)."""

    OPEN_FIELDS: typing.ClassVar[tuple[str, ...]] = ()
    """Fields for which every value of their type is valid (a negative int, an empty
    tuple). The range battery in the tests skips them; every other int field must
    reject a large negative value and every other tuple field an empty one."""

    INT_LIMIT: typing.ClassVar[int] = 10**9
    """Upper bound of every int field (and every int in a tuple field) unless the config declares a
    tighter one with :func:`check_fields` ``at_most``: no count, size or budget here comes near it, and a
    larger value would only fail later, inside a job (memory, time or an index overflow)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ConfigError` when a field is outside its valid range.

        Runs on construction, so every preset and every ``--set`` value is checked
        before a job is planned. The base checks apply to every config: ``device`` is
        ``cpu`` or ``cuda[:N]``, no float field is NaN or infinite, and no int field exceeds
        :attr:`INT_LIMIT`. A subclass declares the ranges of its own fields by overriding
        this method, calling ``super().validate()`` and then :func:`check_fields` (or its
        own checks).
        """
        if not isinstance(self.device, str) or not _DEVICE.fullmatch(self.device):
            raise ConfigError(f"{type(self).__name__}.device must be 'cpu' or 'cuda[:N]', got {self.device!r}")
        for f in dataclasses.fields(self):
            for value in _items(getattr(self, f.name)):
                if isinstance(value, float) and not math.isfinite(value):
                    raise ConfigError(f"{type(self).__name__}.{f.name} must be a finite number, got {value}")
                if isinstance(value, int) and not isinstance(value, bool) and abs(value) > self.INT_LIMIT:
                    raise ConfigError(f"{type(self).__name__}.{f.name} must be at most {self.INT_LIMIT:.0e} in "
                                      f"absolute value, got {value}")


_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


def _items(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def check_fields(
    cfg: ExperimentConfig,
    *,
    positive: Iterable[str] = (),
    nonnegative: Iterable[str] = (),
    fraction: Iterable[str] = (),
    open_fraction: Iterable[str] = (),
    nonempty: Iterable[str] = (),
    at_least: Mapping[str, float] | None = None,
    at_most: Mapping[str, float] | None = None,
    choices: Mapping[str, Iterable[Any]] | None = None,
) -> None:
    """Check declared ranges of ``cfg``'s fields; raise :class:`ConfigError` on the first violation.

    Each keyword names fields. A tuple field is checked element-wise; ``None``
    (an optional field left unset) passes every range.

    * ``positive``: > 0; ``nonnegative``: >= 0;
    * ``fraction``: in [0, 1]; ``open_fraction``: in (0, 1);
    * ``nonempty``: a tuple, list or string with at least one element;
    * ``at_least``: ``{name: lo}``, >= lo;
    * ``at_most``: ``{name: hi}``, <= hi (sizes and counts whose larger values would fail inside a job);
    * ``choices``: ``{name: allowed}``, every element in ``allowed``.
    """
    name = type(cfg).__name__

    def fail(field_name: str, rule: str, value: Any) -> None:
        raise ConfigError(f"{name}.{field_name} must be {rule}, got {value!r}")

    def each(field_name: str, ok: Callable[[Any], bool], rule: str) -> None:
        value = getattr(cfg, field_name)
        for v in _items(value):
            if v is not None and not ok(v):
                fail(field_name, rule, value)

    for f in positive:
        each(f, lambda v: v > 0, "> 0")
    for f in nonnegative:
        each(f, lambda v: v >= 0, ">= 0")
    for f in fraction:
        each(f, lambda v: 0 <= v <= 1, "in [0, 1]")
    for f in open_fraction:
        each(f, lambda v: 0 < v < 1, "in (0, 1)")
    for f, lo in (at_least or {}).items():
        each(f, lambda v, lo=lo: v >= lo, f">= {lo}")
    for f, hi in (at_most or {}).items():
        each(f, lambda v, hi=hi: v <= hi, f"<= {hi:g}")
    for f, allowed in (choices or {}).items():
        allowed = tuple(allowed)
        each(f, lambda v, allowed=allowed: v in allowed, f"one of {', '.join(map(repr, allowed))}")
    for f in nonempty:
        value = getattr(cfg, f)
        if value is not None and len(value) == 0:
            fail(f, "non-empty", value)


def resolve_device(name: str) -> str:
    """Check a device name and return it; ``cuda`` must actually be present."""
    if name == "cpu":
        return name
    if name.startswith("cuda"):
        try:
            import torch
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError("device='cuda' needs PyTorch: pip install 'icml25[torch]'") from exc
        if not torch.cuda.is_available():
            raise ConfigError("device='cuda' was asked for but no CUDA device is available")
        return name
    raise ConfigError(f"device must be 'cpu' or 'cuda[:N]', got {name!r}")


@dataclass(frozen=True)
class Fidelity:
    """How faithful one preset of an experiment is to the paper's experiment.

    Attributes:
        level: ``"paper"`` (the paper's protocol at its scale, or a documented equivalent),
            ``"reduced"`` (the paper's protocol at a stated fraction of its budget or size) or
            ``"mechanism"`` (a stand-in for the paper's setting).
        note: one line saying what that means here: for ``reduced`` the fraction (e.g.
            ``"3k of 1M environment steps"``), for ``mechanism`` what stands in for what.
    """

    level: str
    note: str

    def __post_init__(self) -> None:
        from icml25.core.paper import FIDELITIES

        if self.level not in FIDELITIES:
            raise ValueError(f"fidelity level must be one of {', '.join(FIDELITIES)}, got {self.level!r}")
        if not isinstance(self.note, str) or not self.note.strip():
            raise ValueError(f"a {self.level!r} fidelity needs a note saying what it means here")


@dataclass(frozen=True)
class Experiment:
    """One experiment of a paper's reproduction.

    Attributes:
        name: identifier, unique within the paper.
        description: one sentence saying what is measured.
        config: the config dataclass (subclass of :class:`ExperimentConfig`).
        run: ``run(cfg, seed, progress) -> Metrics``; deterministic given the seed.
        presets: field overrides for ``smoke``, ``quick`` and ``full``.
        seeds: default number of seeds for each preset.
        figures: optional ``figures(per_seed_metrics, cfg, outdir) -> list[Path]``
            that draws PNG figures from the metrics of all seeds.
        full_requirements: what a user must provide for the ``full`` preset
            (data paths, a GPU...); empty when nothing.
        timed: the metrics include wall-clock times; the runner then runs its jobs
            one at a time, after the others, so that no other job shares the CPU.
        max_seeds: per preset, the seed budget of the adaptive rule for this
            experiment when it differs from the runner's default (an expensive
            experiment may cap its growth); ``--max-seeds`` overrides it.
        requires: top-level modules this experiment needs beyond what its paper's
            package imports (e.g. ``("cvxpy",)`` for an oracle baseline); without them
            ``reproduce`` skips the experiment with one line naming the extra.
        fidelity: per preset (every one of :data:`PRESETS`), its :class:`Fidelity` to the
            paper's experiment. Every claim of the experiment is judged at that fidelity: a
            paper claim whose ``fair_at`` is higher is NOT_TESTED at that preset.
    """

    name: str
    description: str
    config: type[ExperimentConfig]
    run: Callable[..., Metrics]
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    seeds: Mapping[str, int] = field(default_factory=lambda: {"smoke": 2, "quick": 5, "full": 10})
    figures: Callable[[list[Metrics], ExperimentConfig, Path], list[Path]] | None = None
    full_requirements: str = ""
    timed: bool = False
    max_seeds: Mapping[str, int] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    fidelity: Mapping[str, Fidelity] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (dataclasses.is_dataclass(self.config) and issubclass(self.config, ExperimentConfig)):
            raise TypeError(f"experiment {self.name!r}: config must be an ExperimentConfig dataclass")
        for preset, fid in self.fidelity.items():
            if preset not in PRESETS:
                raise ValueError(f"experiment {self.name!r}: fidelity for unknown preset {preset!r}")
            if not isinstance(fid, Fidelity):
                raise TypeError(f"experiment {self.name!r}: fidelity[{preset!r}] must be a Fidelity, got {fid!r}")
        for preset in self.presets:
            if preset not in PRESETS:
                raise ValueError(f"experiment {self.name!r}: unknown preset {preset!r}")
            self._check_keys(self.presets[preset])
            self.make_config(preset)  # every preset's values are in range

    @property
    def fields(self) -> dict[str, dataclasses.Field]:
        return {f.name: f for f in dataclasses.fields(self.config)}

    def _check_keys(self, overrides: Mapping[str, Any]) -> None:
        unknown = sorted(set(overrides) - set(self.fields))
        if unknown:
            raise ConfigError(
                f"experiment {self.name!r} has no setting {unknown[0]!r}; valid: {', '.join(sorted(self.fields))}"
            )

    def make_config(self, preset: str = "quick", overrides: Mapping[str, Any] | None = None) -> ExperimentConfig:
        """Build the config of ``preset`` with ``overrides`` (already typed) on top."""
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
        values = dict(self.presets.get(preset, {}))
        values.update(overrides or {})
        self._check_keys(values)
        try:
            return self.config(**values)
        except ConfigError as exc:
            raise ConfigError(f"experiment {self.name!r}: {exc}") from None

    def missing_requirements(self) -> list[str]:
        """The modules of :attr:`requires` that are not installed."""
        import importlib.util

        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def fidelity_of(self, preset: str) -> Fidelity:
        """The declared fidelity of ``preset`` (every runnable experiment declares all three)."""
        try:
            return self.fidelity[preset]
        except KeyError:
            raise ValueError(f"experiment {self.name!r} declares no fidelity for preset {preset!r}") from None

    def default_seeds(self, preset: str) -> int:
        return int(self.seeds.get(preset, 1))


def config_to_dict(cfg: ExperimentConfig) -> dict[str, Any]:
    return json.loads(json.dumps(dataclasses.asdict(cfg), default=list))


def config_hash(cfg: ExperimentConfig) -> str:
    """Stable short hash of a config's values (key of the results store)."""
    blob = json.dumps(config_to_dict(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{type(cfg).__name__}:{blob}".encode()).hexdigest()[:16]


def _field_type(cfg_type: type, name: str) -> Any:
    hints = typing.get_type_hints(cfg_type)
    return hints[name]


def parse_value(cfg_type: type[ExperimentConfig], key: str, text: str) -> Any:
    """Convert the text of ``--set key=text`` to the type of field ``key``.

    Supports bool, int, float, str, optional versions of these, and tuples of them
    (comma-separated). Raises :class:`ConfigError` on a value of the wrong type.
    """
    typ = _field_type(cfg_type, key)
    return _parse(typ, text, key)


def _parse(typ: Any, text: str, key: str) -> Any:
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if text.lower() in ("none", "null") and len(args) < len(typing.get_args(typ)):
            return None
        errors = []
        for arg in args:
            try:
                return _parse(arg, text, key)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0])
    if origin in (tuple, list):
        args = typing.get_args(typ)
        inner = args[0] if args else str
        items = [s for s in (p.strip() for p in text.split(",")) if s]
        values = [_parse(inner, s, key) for s in items]
        return tuple(values) if origin is tuple else values
    if typ is bool:
        low = text.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"setting {key!r} takes a bool (true/false), got {text!r}")
    if typ is int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"setting {key!r} takes an int, got {text!r}") from None
    if typ is float:
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(f"setting {key!r} takes a float, got {text!r}") from None
        if not math.isfinite(value):
            raise ConfigError(f"setting {key!r} takes a finite number, got {text!r}")
        return value
    if typ is str:
        return text
    if typing.get_origin(typ) is typing.Literal:
        choices = typing.get_args(typ)
        if text in choices:
            return text
        raise ConfigError(f"setting {key!r} takes one of {', '.join(map(str, choices))}, got {text!r}")
    raise ConfigError(f"setting {key!r} has a type that cannot be set from the command line: {typ!r}")


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    """Split ``["a=1", "b=x"]`` into ``{"a": "1", "b": "x"}``; the values stay text."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set takes key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def check_metrics(metrics: Mapping[str, Any]) -> Metrics:
    """Validate and normalise an experiment's output to plain JSON-able values."""
    if not isinstance(metrics, Mapping):
        raise TypeError(f"an experiment must return a dict of metrics, got {type(metrics).__name__}")
    out: Metrics = {}
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise TypeError(f"metric names must be strings, got {key!r}")
        if hasattr(value, "tolist"):  # numpy scalars and arrays
            value = value.tolist()
        if isinstance(value, (bool, int, float)):
            out[key] = float(value)
        elif isinstance(value, (list, tuple)):
            out[key] = [float(v) for v in value]
        else:
            raise TypeError(f"metric {key!r} must be a number or a list of numbers, got {type(value).__name__}")
    return out

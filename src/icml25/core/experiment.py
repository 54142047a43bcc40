"""Experiments: a pure function of (config, seed) returning a flat dict of metrics.

Every paper's reproduction is a list of :class:`Experiment`. Each has a config
dataclass (subclass of :class:`ExperimentConfig`) and three presets:

* ``smoke``: seconds; what the test suite runs;
* ``quick``: at most a few minutes on 2 CPU cores; what ``icml25 reproduce`` runs;
* ``full``: the paper's scale; may need a GPU or data the user provides.

A preset is a set of field overrides on the dataclass defaults; ``--set key=value``
overrides fields on top of the preset. A field may hold a method's own config
dataclass, whose fields are then set with dotted keys (``--set agent.lr=1e-3``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml25.common.checks import ConfigError, check_fields, check_ranges

__all__ = [
    "PRESETS", "ConfigError", "Experiment", "ExperimentConfig", "Fidelity", "Metrics", "ProgressFn", "TorchConfig",
    "build_config", "check_fields", "check_metrics", "check_ranges", "config_from_dict", "config_hash",
    "config_to_dict", "get_setting",
    "leaf_fields", "no_progress", "parse_overrides", "parse_value", "resolve_device", "setting_type",
]

PRESETS: tuple[str, ...] = ("smoke", "quick", "full")

Metrics = dict[str, Any]
"""Flat mapping of metric name to a float (or int/bool), or a short list of floats."""

ProgressFn = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    """The default progress callback: ignore progress reports."""


@dataclass
class ExperimentConfig:
    """Base class of every experiment config.

    Subclasses are dataclasses whose every field has a default and a one-line
    docstring-style comment. A field may hold a method's own config dataclass (e.g.
    ``agent: AgentConfig = field(default_factory=AgentConfig)``): its fields are then
    settings too, named with dots (``--set agent.lr=1e-3``, ``presets={"quick":
    {"agent.lr": 1e-3}}``), and the method config validates itself on construction.
    An experiment that runs PyTorch uses :class:`TorchConfig`, which adds ``device``.
    """

    OPEN_FIELDS: typing.ClassVar[tuple[str, ...]] = ()
    """Settings (dotted for a nested config's fields) for which every value of their type
    is valid (a negative int, an empty tuple). The range battery in the tests skips them;
    every other int setting must reject a large negative value and every other tuple
    setting an empty one."""

    INT_LIMIT: typing.ClassVar[int] = 10**9
    """Upper bound of every int setting (and every int in a tuple setting) unless the config declares a
    tighter one with :func:`check_fields` ``at_most``: no count, size or budget here comes near it, and a
    larger value would only fail later, inside a job (memory, time or an index overflow)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ConfigError` when a setting is outside its valid range.

        Runs on construction, so every preset and every ``--set`` value is checked
        before a job is planned. The base checks apply to every setting, nested ones
        included: no float is NaN or infinite and no int exceeds :attr:`INT_LIMIT`. A
        subclass declares the ranges of its own fields by overriding this method, calling
        ``super().validate()`` and then :func:`check_fields`.
        """
        for key, value in _leaf_values(self):
            for item in _items(value):
                if isinstance(item, float) and not math.isfinite(item):
                    raise ConfigError(f"{type(self).__name__}.{key} must be a finite number, got {item}")
                if isinstance(item, int) and not isinstance(item, bool) and abs(item) > self.INT_LIMIT:
                    raise ConfigError(f"{type(self).__name__}.{key} must be at most {self.INT_LIMIT:.0e} in "
                                      f"absolute value, got {item}")


@dataclass
class TorchConfig(ExperimentConfig):
    """Config of an experiment that runs PyTorch: it adds ``device``.

    Only such experiments take ``--set device=...``; any other refuses it with one line.
    """

    device: str = "cpu"
    """Where tensors live: ``cpu`` or ``cuda[:N]``."""

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.device, str) or not _DEVICE.fullmatch(self.device):
            raise ConfigError(f"{type(self).__name__}.device must be 'cpu' or 'cuda[:N]', got {self.device!r}")


def _is_config_type(typ: Any) -> bool:  # noqa: ANN401
    return isinstance(typ, type) and dataclasses.is_dataclass(typ)


def _leaf_values(cfg: Any, prefix: str = "") -> list[tuple[str, Any]]:  # noqa: ANN401
    """(dotted name, value) of every setting of a config instance, nested configs expanded."""
    out = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out.extend(_leaf_values(value, f"{prefix}{f.name}."))
        else:
            out.append((prefix + f.name, value))
    return out


def leaf_fields(cfg_type: type) -> dict[str, dataclasses.Field]:
    """Every setting of a config class by name: a nested config's fields appear as ``outer.inner``."""
    hints = typing.get_type_hints(cfg_type)
    out: dict[str, dataclasses.Field] = {}
    for f in dataclasses.fields(cfg_type):
        if _is_config_type(hints[f.name]):
            out.update({f"{f.name}.{k}": v for k, v in leaf_fields(hints[f.name]).items()})
        else:
            out[f.name] = f
    return out


def setting_type(cfg_type: type, key: str) -> Any:  # noqa: ANN401
    """The declared type of setting ``key`` (dotted for a nested config's field)."""
    head, _, rest = key.partition(".")
    try:
        typ = typing.get_type_hints(cfg_type)[head]
    except KeyError:
        raise ConfigError(f"{cfg_type.__name__} has no setting {key!r}") from None
    if rest:
        if not _is_config_type(typ):
            raise ConfigError(f"{cfg_type.__name__}.{head} is not a group of settings: {key!r} does not exist")
        return setting_type(typ, rest)
    if _is_config_type(typ):
        raise ConfigError(f"setting {key!r} is a group of settings; set its fields, e.g. "
                          f"{key}.{dataclasses.fields(typ)[0].name}=...")
    return typ


def get_setting(cfg: Any, key: str) -> Any:  # noqa: ANN401
    """The value of setting ``key`` (dotted for a nested config's field) in a config instance."""
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _split(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Top-level values, and the dotted ones grouped by their first name."""
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        head, dot, rest = key.partition(".")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            top[key] = value
    return top, nested


def _named(exc: ValueError, cls: type, path: str) -> ConfigError:
    """A nested config's error named by its dotted path: ``AgentConfig.lr must...`` -> ``Outer.agent.lr must...``."""
    text = str(exc)
    prefix = f"{cls.__name__}."
    return ConfigError(f"{path}.{text[len(prefix):]}" if text.startswith(prefix) else f"{path}: {text}")


def _with(obj: Any, values: Mapping[str, Any], path: str) -> Any:  # noqa: ANN401
    """A copy of config instance ``obj`` with ``values`` (dotted keys reach into nested configs)."""
    top, nested = _split(values)
    for head, sub in nested.items():
        top[head] = _with(top.get(head, getattr(obj, head)), sub, f"{path}.{head}")
    try:
        return dataclasses.replace(obj, **top)
    except ValueError as exc:
        raise _named(exc, type(obj), path) from None


def build_config(cfg_type: type, values: Mapping[str, Any]) -> Any:  # noqa: ANN401
    """``cfg_type(**values)`` where dotted keys set fields of nested configs (on their defaults).

    An error raised by a nested config names the setting by its dotted path
    (``SearchConfig.agent.lr must be > 0``), as ``--set`` spells it.
    """
    top, nested = _split(values)
    fields = {f.name: f for f in dataclasses.fields(cfg_type)}
    for head, sub in nested.items():
        base = top.get(head)
        if base is None:
            f = fields[head]
            base = f.default_factory() if f.default is dataclasses.MISSING else f.default
        top[head] = _with(base, sub, f"{cfg_type.__name__}.{head}")
    return cfg_type(**top)


def config_from_dict(cfg_type: type, values: Mapping[str, Any]) -> Any:  # noqa: ANN401
    """Rebuild a config from :func:`config_to_dict`'s output (a job's stored config).

    A nested config stored as a dict is rebuilt as its dataclass (its tuples from JSON lists), so the
    experiment receives what :meth:`Experiment.make_config` gave when the job was planned.
    """
    return cfg_type(**_nested_values(cfg_type, values, top=True))


def _nested_values(cfg_type: type, values: Mapping[str, Any], top: bool = False) -> dict[str, Any]:
    hints = typing.get_type_hints(cfg_type)
    out = {}
    for key, value in values.items():
        typ = hints.get(key)
        if _is_config_type(typ) and isinstance(value, Mapping):
            value = typ(**_nested_values(typ, value))
        elif not top and isinstance(value, list) and typing.get_origin(typ) is tuple:
            value = tuple(value)
        out[key] = value
    return out


_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


def _items(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


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
        not_at_smoke: metrics the ``smoke`` preset does not produce, or produces as NaN, with
            the reason (e.g. the smoke preset skips a model). The test suite expects exactly
            these to be missing at smoke (an entry whose metric appears must be removed).
        flaky_at_smoke: metrics that may be NaN at smoke on some runs, with the reason.
        timing_metrics: a regular expression naming metrics of a ``timed`` experiment that
            depend on wall-clock time although their names do not say so (the determinism
            test skips them); empty when none.
        data_setting: for an experiment that runs only on the paper's own data (which no
            package ships), the config setting (dotted for a nested one) that holds its path.
            While that setting is empty ``reproduce`` leaves the experiment out with one line
            naming ``--set <data_setting>=PATH``, and its claims read "not run", never a
            verdict on a stand-in; ``full_requirements`` says what the path must hold. Empty
            for an experiment that generates or bundles its data.
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
    not_at_smoke: Mapping[str, str] = field(default_factory=dict)
    flaky_at_smoke: Mapping[str, str] = field(default_factory=dict)
    timing_metrics: str = ""
    data_setting: str = ""

    def __post_init__(self) -> None:
        if not (dataclasses.is_dataclass(self.config) and issubclass(self.config, ExperimentConfig)):
            raise TypeError(f"experiment {self.name!r}: config must be an ExperimentConfig dataclass")
        for preset, fid in self.fidelity.items():
            if preset not in PRESETS:
                raise ValueError(f"experiment {self.name!r}: fidelity for unknown preset {preset!r}")
            if not isinstance(fid, Fidelity):
                raise TypeError(f"experiment {self.name!r}: fidelity[{preset!r}] must be a Fidelity, got {fid!r}")
        if self.data_setting:
            setting = self.fields.get(self.data_setting)
            if setting is None or setting_type(self.config, self.data_setting) is not str or setting.default != "":
                raise ValueError(f"experiment {self.name!r}: data_setting {self.data_setting!r} must name a str "
                                 f"setting of its config whose default is empty")
            if not self.full_requirements:
                raise ValueError(f"experiment {self.name!r}: an experiment with a data_setting must say in "
                                 f"full_requirements what the path must hold")
        for preset in self.presets:
            if preset not in PRESETS:
                raise ValueError(f"experiment {self.name!r}: unknown preset {preset!r}")
            self._check_keys(self.presets[preset])
            self.make_config(preset)  # every preset's values are in range

    @property
    def fields(self) -> dict[str, dataclasses.Field]:
        """Every setting of the config by name (a nested config's fields as ``outer.inner``)."""
        return leaf_fields(self.config)

    def _check_keys(self, overrides: Mapping[str, Any]) -> None:
        valid = set(self.fields) | {f.name for f in dataclasses.fields(self.config)}  # a nested config may be set whole
        unknown = sorted(set(overrides) - valid)
        if "device" in unknown and not issubclass(self.config, TorchConfig):
            raise ConfigError(f"experiment {self.name!r} does not use a device (it does not run PyTorch): "
                              f"drop --set device=...")
        if unknown:
            raise ConfigError(
                f"experiment {self.name!r} has no setting {unknown[0]!r}; valid: {', '.join(sorted(self.fields))}"
            )

    def make_config(self, preset: str = "quick", overrides: Mapping[str, Any] | None = None) -> ExperimentConfig:
        """Build the config of ``preset`` with ``overrides`` (already typed; dotted keys for nested settings)."""
        if preset not in PRESETS:
            raise ConfigError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
        values = dict(self.presets.get(preset, {}))
        values.update(overrides or {})
        self._check_keys(values)
        try:
            return build_config(self.config, values)
        except ValueError as exc:  # ConfigError, or a method config's own check
            raise ConfigError(f"experiment {self.name!r}: {exc}") from None

    def missing_requirements(self) -> list[str]:
        """The modules of :attr:`requires` that are not installed."""
        import importlib.util

        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def missing_data(self, cfg: ExperimentConfig) -> bool:
        """Whether ``cfg`` leaves this experiment's :attr:`data_setting` empty (it then cannot run)."""
        return bool(self.data_setting) and not get_setting(cfg, self.data_setting)

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


def parse_value(cfg_type: type[ExperimentConfig], key: str, text: str) -> Any:  # noqa: ANN401
    """Convert the text of ``--set key=text`` to the type of setting ``key`` (dotted for nested ones).

    Supports bool, int, float, str, optional versions of these, and tuples of them
    (comma-separated). Raises :class:`ConfigError` on a value of the wrong type.
    """
    return _parse(setting_type(cfg_type, key), text, key)


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

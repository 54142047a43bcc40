"""Library-wide contracts (issue 14 items 1-3, issue 15 item 4).

Every paper declares its cases in ``tests/contracts/<slug>.py`` (see the README there);
this module runs the same batteries over all of them:

* scikit-learn: ``parametrize_with_checks`` over every exported estimator;
* PyTorch: every exported ``nn.Module`` runs in float64, round-trips its state_dict
  into a fresh instance with identical outputs, and runs on the meta device without
  creating tensors elsewhere (mixing a CPU tensor into a meta computation raises);
* gymnasium: every registered ``icml25/`` environment passes ``check_env``;
* bad input: each declared case raises the declared exception with a message.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path

import pytest

from icml25.core.registry import available_slugs

CONTRACTS = Path(__file__).resolve().parents[1] / "contracts"
SLUGS, _ = available_slugs()


def _load(slug: str):
    path = CONTRACTS / f"{slug}.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location(f"icml25_contracts_{slug}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = {slug: _load(slug) for slug in SLUGS}


def _declared(name: str) -> list[tuple[str, object]]:
    return [(slug, getattr(m, name)) for slug, m in CASES.items() if m is not None and hasattr(m, name)]


def _exported_classes(slug: str) -> list[type]:
    package = importlib.import_module(f"icml25.papers.{slug}")
    names = getattr(package, "__all__", [n for n in dir(package) if not n.startswith("_")])
    return [obj for n in names if inspect.isclass(obj := getattr(package, n, None))
            and obj.__module__.startswith(f"icml25.papers.{slug}")]


# ---------------------------------------------------------------- scikit-learn
from sklearn.base import BaseEstimator  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

ESTIMATORS = [est for _, ests in _declared("ESTIMATORS") for est in ests]
EXPECTED_FAILED: dict[str, dict[str, str]] = {}
for _, table in _declared("EXPECTED_FAILED"):
    for _name in table:
        assert _name not in EXPECTED_FAILED, f"two papers declare expected failures for a class named {_name}"
    EXPECTED_FAILED.update(table)


def _is_estimator_like(cls: type) -> bool:
    return hasattr(cls, "fit") and (hasattr(cls, "predict") or hasattr(cls, "transform"))


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED.get(type(est).__name__, {}))
def test_sklearn_contract(estimator, check):
    check(estimator)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_exported_estimator_is_checked(slug):
    declared = {type(e) for s, ests in _declared("ESTIMATORS") if s == slug for e in ests}
    for cls in _exported_classes(slug):
        if _is_estimator_like(cls):
            assert issubclass(cls, BaseEstimator), f"{cls.__name__} has fit and predict/transform but is no BaseEstimator"
            assert cls in declared, f"tests/contracts/{slug}.py must list an instance of {cls.__name__} in ESTIMATORS"
            cls()  # constructible with defaults


def test_expected_failures_are_few_and_explained():
    for name, checks in EXPECTED_FAILED.items():
        assert len(checks) <= 2, f"{name}: at most two expected failed checks, got {sorted(checks)}"
        for check, reason in checks.items():
            assert isinstance(reason, str) and len(reason) > 10, f"{name}.{check}: give the reason"


# --------------------------------------------------------------------- PyTorch
torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Small tensors run faster on one thread, and the batteries must not compete for two cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

MODULES = [(slug, name, factory) for slug, table in _declared("MODULES") for name, factory in table.items()]
META_EXEMPT: dict[tuple[str, str], str] = {(slug, name): reason for slug, table in _declared("META_EXEMPT")
                                           for name, reason in table.items()}
MODULE_IDS = [f"{slug}.{name}" for slug, name, _ in MODULES]


def _map(obj, fn):
    """Apply ``fn`` to every tensor in a nested structure (tuples, lists, dicts, PyG data)."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple):
        return tuple(_map(o, fn) for o in obj)
    if isinstance(obj, list):
        return [_map(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    if hasattr(obj, "apply") and hasattr(obj, "keys"):  # torch_geometric Data / Batch
        return obj.clone().apply(fn)
    return obj


def _tensors(obj) -> list:
    found: list = []
    _map(obj, lambda t: found.append(t) or t)
    return found


def _float(dtype):
    return lambda t: t.to(dtype) if t.is_floating_point() else t


def _build(factory, seed: int):
    torch.manual_seed(seed)
    module, args = factory()
    assert isinstance(module, nn.Module)
    return module, tuple(args)


@pytest.mark.parametrize(("slug", "name", "factory"), MODULES, ids=MODULE_IDS)
def test_module_forward_float64(slug, name, factory):
    module, args = _build(factory, 0)
    module = module.to(torch.float64).eval()
    with torch.no_grad():
        out = module(*_map(args, _float(torch.float64)))
    floats = [t for t in _tensors(out) if t.is_floating_point()]
    assert floats, f"{name}.forward returned no floating tensor"
    for t in floats:
        assert t.dtype == torch.float64, f"{name}.forward returned {t.dtype} for float64 inputs and parameters"


@pytest.mark.parametrize(("slug", "name", "factory"), MODULES, ids=MODULE_IDS)
def test_module_state_dict_round_trip(slug, name, factory):
    first, args = _build(factory, 0)
    second, _ = _build(factory, 1)
    second.load_state_dict(first.state_dict())  # strict: every key exists at construction
    first.eval(), second.eval()
    with torch.no_grad():
        torch.manual_seed(2)
        a = _tensors(first(*args))
        torch.manual_seed(2)
        b = _tensors(second(*args))
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert torch.equal(x, y), f"{name}: a fresh instance loaded with the state_dict gives other outputs"


@pytest.mark.parametrize(("slug", "name", "factory"), MODULES, ids=MODULE_IDS)
def test_module_follows_its_inputs_device(slug, name, factory):
    if (slug, name) in META_EXEMPT:
        pytest.skip(f"meta device: {META_EXEMPT[slug, name]}")
    module, args = _build(factory, 0)
    meta = torch.device("meta")
    module = module.to(meta).eval()
    with torch.no_grad():
        out = module(*_map(args, lambda t: t.to(meta)))
    for t in _tensors(out):
        assert t.device == meta, f"{name}.forward returned a tensor on {t.device} for meta inputs"


@pytest.mark.parametrize("slug", SLUGS)
def test_every_exported_module_is_checked(slug):
    declared = {name for s, table in _declared("MODULES") if s == slug for name in table}
    for cls in _exported_classes(slug):
        if issubclass(cls, nn.Module):
            assert cls.forward is not nn.Module.forward, f"{cls.__name__} is an nn.Module without forward"
            assert cls.__name__ in declared, f"tests/contracts/{slug}.py must give MODULES[{cls.__name__!r}]"


def test_meta_exemptions_are_explained():
    for (slug, name), reason in META_EXEMPT.items():
        assert isinstance(reason, str) and len(reason) > 10, f"{slug}.{name}"
        assert name in {n for s, n, _ in MODULES if s == slug}, f"{slug}.{name} is exempt but not in MODULES"


# ------------------------------------------------------------------- gymnasium
gym = pytest.importorskip("gymnasium")
from gymnasium.utils.env_checker import check_env  # noqa: E402

import icml25.envs  # noqa: E402

ENV_IDS = sorted(icml25.envs.ENVS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_registered_env_passes_check_env(env_id):
    env = gym.make(env_id)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        obs, info = env.reset(seed=0)
        assert env.observation_space.contains(obs)
    finally:
        env.close()


@pytest.mark.parametrize("slug", SLUGS)
def test_every_exported_env_is_registered(slug):
    envs = [c for c in _exported_classes(slug) if issubclass(c, gym.Env) and not issubclass(c, gym.Wrapper)]
    if not envs:
        return
    made = set()
    for env_id in ENV_IDS:
        if icml25.envs.ENVS[env_id][0].startswith(f"icml25.papers.{slug}."):
            env = gym.make(env_id)
            made.add(type(env.unwrapped))
            env.close()
    for cls in envs:
        assert cls in made, f"{cls.__name__} is a gym.Env but no icml25/ id makes it"


# ------------------------------------------------------------------- bad input
BAD = [(slug, case) for slug, cases in _declared("BAD_INPUTS") for case in cases]


@pytest.mark.parametrize(("slug", "case"), BAD, ids=[f"{s}.{c[0]}" for s, c in BAD])
def test_bad_input_raises_a_clear_error(slug, case):
    _, thunk, expected = case
    with pytest.raises(expected) as info:
        thunk()
    assert str(info.value).strip(), "the error must say what is wrong"


# ------------------------------------------------------- torch experiments honour `device`
from icml25.core.experiment import TorchConfig  # noqa: E402
from icml25.core.registry import PAPERS_ROOT, load_reproduction  # noqa: E402

CPU_ONLY: dict[tuple[str, str], str] = {(slug, name): reason for slug, table in _declared("CPU_ONLY")
                                        for name, reason in table.items()}
"""Experiments of torch papers that take no device (their config is not a TorchConfig), with the reason."""


def _uses_torch(slug: str) -> bool:
    return any("import torch" in p.read_text() for p in (PAPERS_ROOT / slug).glob("*.py"))


def _run_source(exp) -> str:
    """The source of an experiment's run function and of the repro functions it calls by name."""
    module = inspect.getmodule(exp.run)
    text = inspect.getsource(exp.run)
    called = [obj for name, obj in vars(module).items() if inspect.isfunction(obj) and f"{name}(" in text
              and obj.__module__ == module.__name__]
    return text + "".join(inspect.getsource(f) for f in called)


TORCH_EXPERIMENTS = [(slug, exp) for slug in SLUGS if _uses_torch(slug) for exp in load_reproduction(slug).experiments]


@pytest.mark.parametrize(("slug", "exp"), TORCH_EXPERIMENTS, ids=[f"{s}.{e.name}" for s, e in TORCH_EXPERIMENTS])
def test_torch_experiment_takes_and_reads_its_device(slug, exp):
    """A static check (no GPU here): an experiment of a torch paper either takes a device (a TorchConfig) and its run
    code reads ``cfg.device`` (benchmarks/gpu_check.sh runs it on CUDA), or is declared CPU_ONLY with the reason and
    takes no device, so ``--set device=cuda`` is refused instead of silently running on the CPU."""
    if (slug, exp.name) in CPU_ONLY:
        assert len(CPU_ONLY[slug, exp.name]) > 10
        assert not issubclass(exp.config, TorchConfig), f"{slug}.{exp.name} is CPU_ONLY but takes a device"
        return
    assert issubclass(exp.config, TorchConfig), (
        f"{slug}.{exp.name}: a torch experiment's config must be a TorchConfig (or list it in CPU_ONLY in "
        f"tests/contracts/{slug}.py with the reason)")
    assert ".device" in _run_source(exp), (
        f"{slug}.{exp.name} never reads its config's device: --set device=cuda would run on CPU "
        f"(or list it in CPU_ONLY in tests/contracts/{slug}.py with the reason)")

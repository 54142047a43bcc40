"""Look up papers and load their reproductions.

Every paper has a folder ``icml25/papers/<slug>/`` whose ``paper.toml`` holds its
registry metadata (title, ids, official code, kind, and the status in two parts:
``method`` with ``method_note`` and ``reproduction`` with ``reproduction_note``; a
position paper has ``method = "not-a-system"`` and no reproduction). The registry discovers the papers from these files without
importing their code, so listing papers needs none of their dependencies, and editing
one paper's metadata touches no other paper (nor any code fingerprint).

A runnable paper also has a module ``icml25.papers.<slug>.repro`` that defines:

* ``EXPERIMENTS``: a list of :class:`~icml25.core.experiment.Experiment`;
* ``CLAIMS``: a list of :class:`~icml25.core.paper.Claim` over those experiments;
* ``API_EXAMPLE``: a short, runnable snippet calling the method on data.
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from icml25.core.experiment import PRESETS, Experiment
from icml25.core.paper import Claim, Paper

PAPERS_ROOT = Path(__file__).resolve().parents[1] / "papers"
METADATA_FILE = "paper.toml"
_FIELDS = ("title", "arxiv", "openreview", "code", "kind", "method", "method_note", "reproduction",
           "reproduction_note")


def read_paper(folder: Path) -> Paper:
    """The :class:`Paper` described by ``folder/paper.toml`` (the folder's name is the slug)."""
    path = folder / METADATA_FILE
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise ValueError(f"{path}: unknown field {unknown[0]!r}; valid: {', '.join(_FIELDS)}")
    missing = [k for k in ("title", "kind", "method", "method_note") if k not in data]
    if missing:
        raise ValueError(f"{path}: missing field {missing[0]!r}")
    try:
        return Paper(slug=folder.name, title=data["title"], arxiv=data.get("arxiv"),
                     openreview=data.get("openreview"), code=data.get("code"), kind=data["kind"],
                     method=data["method"], method_note=data["method_note"], reproduction=data.get("reproduction"),
                     reproduction_note=data.get("reproduction_note", ""))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def discover(root: Path = PAPERS_ROOT) -> tuple[Paper, ...]:
    """Every paper under ``root``, sorted by slug."""
    return tuple(read_paper(d) for d in sorted(root.iterdir()) if (d / METADATA_FILE).is_file())


PAPERS: dict[str, Paper] = {p.slug: p for p in discover()}


def all_papers() -> tuple[Paper, ...]:
    """Every registered paper, sorted by slug."""
    return tuple(PAPERS.values())


EXTRAS: dict[str, tuple[str, str]] = {
    "torch": ("PyTorch", "torch"),
    "torch_geometric": ("PyTorch Geometric", "graph"),
    "torch_scatter": ("PyTorch Geometric", "graph"),
    "gymnasium": ("gymnasium", "rl"),
    "mujoco": ("MuJoCo (gymnasium's MuJoCo tasks)", "mujoco"),
    "ray": ("Ray", "ray"),
    "cvxpy": ("cvxpy", "convex"),
    "pandas": ("pandas", "tables"),
    "sksurv": ("scikit-survival", "survival"),
    "rdkit": ("RDKit, AutoDock Vina and meeko", "chem"),
    "vina": ("RDKit, AutoDock Vina and meeko", "chem"),
    "meeko": ("RDKit, AutoDock Vina and meeko", "chem"),
    "gemmi": ("RDKit, AutoDock Vina and meeko", "chem"),
    "selfies": ("RDKit, AutoDock Vina and meeko", "chem"),
}
"""Top-level module -> (what it is, the extra that installs it)."""


class MissingExtraError(ImportError):
    """A paper needs an optional dependency that is not installed. ``str()`` is one line saying what to install."""

    def __init__(self, slug: str, module: str):
        self.slug, self.module = slug, module
        what, extra = EXTRAS.get(module, (module, "all"))
        super().__init__(f"{slug} needs {what}: pip install 'icml25[{extra}]'")


class MissingDataError(MissingExtraError):
    """An experiment runs only on the paper's data, and its data setting is empty. ``reproduce`` leaves it out
    as it does an experiment whose extra is missing; ``str()`` is one line saying which ``--set`` reads the data."""

    def __init__(self, slug: str, setting: str):
        self.slug, self.module, self.setting = slug, "", setting
        ImportError.__init__(self, f"{slug} needs the paper's data: --set {setting}=PATH (see `icml25 show "
                                   f"{slug.split('/')[0]}` for what PATH must hold)")


class UnknownPaperError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


def get_paper(slug: str) -> Paper:
    try:
        return PAPERS[slug]
    except KeyError:
        raise UnknownPaperError(f"unknown paper {slug!r}; valid: {', '.join(sorted(PAPERS))}") from None


@dataclass(frozen=True)
class Reproduction:
    """A paper's experiments and claims, as loaded from its ``repro`` module."""

    paper: Paper
    experiments: tuple[Experiment, ...]
    claims: tuple[Claim, ...]
    api_example: str

    def experiment(self, name: str) -> Experiment:
        for exp in self.experiments:
            if exp.name == name:
                return exp
        raise KeyError(f"paper {self.paper.slug!r} has no experiment {name!r}")


def load_reproduction(slug: str) -> Reproduction:
    """Import ``icml25.papers.<slug>.repro`` and check that it is consistent."""
    paper = get_paper(slug)
    if not paper.runnable:
        raise ValueError(f"paper {slug!r} is {paper.status}: it has no reproduction to run")
    try:
        module = importlib.import_module(f"icml25.papers.{slug}.repro")
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top and top != "icml25":
            raise MissingExtraError(slug, top) from exc
        raise
    experiments = tuple(module.EXPERIMENTS)
    claims = tuple(module.CLAIMS)
    names = [e.name for e in experiments]
    if len(set(names)) != len(names):
        raise ValueError(f"paper {slug!r}: experiment names must be unique, got {names}")
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"paper {slug!r}: claim ids must be unique, got {ids}")
    check_reproduction(slug, experiments, claims)
    return Reproduction(paper, experiments, claims, module.API_EXAMPLE.strip())


def check_reproduction(slug: str, experiments: tuple[Experiment, ...], claims: tuple[Claim, ...]) -> None:
    """Reject what the pre-registration rules forbid (raises ``ValueError`` naming the paper).

    Every experiment declares a fidelity for every preset; every claim names a known
    experiment; ``requires`` names known ``check`` claims of the same paper, without cycles.
    (A paper claim's ``source`` and ``fair_at`` are enforced by :class:`Claim` itself.)
    """
    names = {e.name for e in experiments}
    for exp in experiments:
        missing = [p for p in PRESETS if p not in exp.fidelity]
        if missing:
            raise ValueError(f"paper {slug!r}: experiment {exp.name!r} declares no fidelity for preset {missing[0]!r}")
    by_id = {c.id: c for c in claims}
    for claim in claims:
        if claim.experiment not in names:
            raise ValueError(f"paper {slug!r}: claim {claim.id!r} names unknown experiment {claim.experiment!r}")
        for rid in claim.requires:
            if rid not in by_id:
                raise ValueError(f"paper {slug!r}: claim {claim.id!r} requires unknown claim {rid!r}")
            if by_id[rid].kind != "check":
                raise ValueError(f"paper {slug!r}: claim {claim.id!r} requires {rid!r}, which is a "
                                 f"{by_id[rid].kind} claim, not a check")

    def visit(cid: str, path: tuple[str, ...]) -> None:
        if cid in path:
            raise ValueError(f"paper {slug!r}: requires form a cycle: {' -> '.join(path + (cid,))}")
        for rid in by_id[cid].requires:
            visit(rid, path + (cid,))

    for cid in by_id:
        visit(cid, ())


def runnable_slugs() -> list[str]:
    return [p.slug for p in PAPERS.values() if p.runnable]


def available_slugs() -> tuple[list[str], list[MissingExtraError]]:
    """The runnable papers whose dependencies are installed, and why the others cannot run."""
    ok, missing = [], []
    for slug in runnable_slugs():
        try:
            load_reproduction(slug)
        except MissingExtraError as exc:
            missing.append(exc)
        else:
            ok.append(slug)
    return ok, missing

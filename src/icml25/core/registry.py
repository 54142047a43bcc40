"""Look up papers and load their reproductions.

A runnable paper has a module ``icml25.papers.<slug>.repro`` that defines:

* ``EXPERIMENTS``: a list of :class:`~icml25.core.experiment.Experiment`;
* ``CLAIMS``: a list of :class:`~icml25.core.paper.Claim` over those experiments;
* ``API_EXAMPLE``: a short, runnable snippet calling the method on data.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from icml25.core.catalog import CATALOG
from icml25.core.experiment import Experiment
from icml25.core.paper import Claim, Paper

PAPERS: dict[str, Paper] = {p.slug: p for p in CATALOG}


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
    module = importlib.import_module(f"icml25.papers.{slug}.repro")
    experiments = tuple(module.EXPERIMENTS)
    claims = tuple(module.CLAIMS)
    names = [e.name for e in experiments]
    if len(set(names)) != len(names):
        raise ValueError(f"paper {slug!r}: experiment names must be unique, got {names}")
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"paper {slug!r}: claim ids must be unique, got {ids}")
    for claim in claims:
        if claim.experiment not in names:
            raise ValueError(f"paper {slug!r}: claim {claim.id!r} names unknown experiment {claim.experiment!r}")
    return Reproduction(paper, experiments, claims, module.API_EXAMPLE.strip())


def runnable_slugs() -> list[str]:
    return [p.slug for p in CATALOG if p.runnable]

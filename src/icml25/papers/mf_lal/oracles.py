"""The four oracles of MF-LAL, each a function from a SMILES to a score (kcal/mol-like, lower is better).

Fidelities as in the official ``data.py`` (``Data.query_batch``), with what we run instead where the
original cannot run offline:

* **l0** :class:`LassoOracle`: scikit-learn ``Lasso`` on Morgan fingerprints (radius 3, 2048 bits). The paper
  fits it to BindingDB affinities; we fit it to l1 docking scores of a pool (the c-MET export is missing offline).
* **l1** :class:`DockingOracle` on one receptor: AutoDock Vina 1.2 (ligand: RDKit ETKDG + MMFF, then meeko
  PDBQT), box from the official ``.gpf`` grid files (15 A cube at the reference-ligand centroid). The code
  docks with AutoDock-GPU and the AD4 scoring function; we use Vina's own scoring (no 6 MB grid-map set per
  receptor to ship).
* **l2** :class:`DockingOracle` over the target's crystal structures: the mean of the per-structure scores.
* **l3** a declared stand-in for absolute binding free energy (which needs GPU molecular dynamics with
  AMBER): consensus docking, the mean over the l1 receptor and the l2 structures at a higher exhaustiveness
  and another search seed. It is a docking score, never a binding free energy.

Every oracle caches its scores by canonical SMILES. :class:`MultiFidelityOracle` bundles the four with
their costs and counts what has been spent.
"""

from __future__ import annotations

import csv
import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
from sklearn.linear_model import Lasso

from icml25.papers.mf_lal.chem import canonical_smiles, morgan_bits, to_mol

for _module in ("vina", "meeko", "gemmi"):  # imported when docking; missing ones surface at import as the extra
    if importlib.util.find_spec(_module) is None:
        raise ModuleNotFoundError(f"No module named {_module!r}", name=_module)

TARGETS = ("brd4_bd2", "cmet")
"""Targets with receptor files in the package: BRD4 second bromodomain and c-MET kinase."""


@dataclass(frozen=True)
class Receptor:
    """One prepared receptor structure and its docking box.

    Attributes:
        target: ``brd4_bd2`` or ``cmet``.
        name: the PDB code, or ``l1_receptor`` for the single structure of fidelity 1.
        fidelity: ``l1`` or ``l2``.
        pdbqt: path of the receptor PDBQT file (protein atoms, AD4 atom types).
        center: box centre (A), the centroid of the structure's reference ligand (from the ``.gpf``).
        box_edge: edge of the cubic box (A): 40 grid intervals of 0.375 A.
    """

    target: str
    name: str
    fidelity: str
    pdbqt: Path
    center: tuple[float, float, float]
    box_edge: float = 15.0


def receptors(target: str = "brd4_bd2", data_dir: str | Path | None = None) -> list[Receptor]:
    """The receptors of ``target``: the l1 receptor first, then the l2 structures in the code's order.

    Args:
        target: one of :data:`TARGETS`.
        data_dir: a folder holding ``boxes.tsv`` and ``<target>/<prefix>.pdbqt`` (the package's own
            ``data/`` folder when ``None``).

    Raises:
        ValueError: unknown target, or a ``data_dir`` without the box table or a receptor file (one line).
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    root = Path(data_dir) if data_dir is not None else Path(str(resources.files("icml25.papers.mf_lal") / "data"))
    table = root / "boxes.tsv"
    if not table.is_file():
        raise ValueError(f"receptor folder {str(root)!r} has no boxes.tsv (expected the MF-LAL receptor data)")
    out = []
    with table.open() as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["target"] != target:
                continue
            path = root / target / f"{row['prefix']}.pdbqt"
            if not path.is_file():
                raise ValueError(f"receptor file {str(path)!r} not found")
            out.append(Receptor(target, row["structure"], row["fidelity"], path,
                                (float(row["center_x"]), float(row["center_y"]), float(row["center_z"])),
                                float(row["box_edge_A"])))
    if not any(r.fidelity == "l1" for r in out):
        raise ValueError(f"receptor folder {str(root)!r} lists no l1 receptor for target {target!r}")
    return sorted(out, key=lambda r: (r.fidelity != "l1", r.name))


class LigandPreparationError(ValueError):
    """A valid molecule that RDKit cannot embed in 3-D or meeko cannot write as PDBQT."""


def ligand_pdbqt(smiles: str, seed: int = 0) -> str:
    """A 3-D PDBQT block of ``smiles`` for Vina: RDKit ETKDGv3 embedding (``seed``) + MMFF, then meeko.

    Raises:
        ValueError: an invalid SMILES, or a molecule that RDKit cannot embed or meeko cannot type.
    """
    from meeko import MoleculePreparation, PDBQTWriterLegacy
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(to_mol(smiles))
    params = AllChem.ETKDGv3()
    params.randomSeed = int(seed)
    if AllChem.EmbedMolecule(mol, params) != 0:
        params.useRandomCoords = True  # RDKit's usual fallback for hard cases
        if AllChem.EmbedMolecule(mol, params) != 0:
            raise LigandPreparationError(f"RDKit could not embed {smiles!r} in 3-D")
    if AllChem.MMFFHasAllMoleculeParams(mol):
        AllChem.MMFFOptimizeMolecule(mol)
    try:
        setups = MoleculePreparation().prepare(mol)
        block, ok, err = PDBQTWriterLegacy.write_string(setups[0])
    except Exception as exc:  # meeko raises assorted errors on exotic chemistry
        raise LigandPreparationError(f"meeko could not prepare {smiles!r}: {exc}") from None
    if not ok:
        raise LigandPreparationError(f"meeko could not write a PDBQT for {smiles!r}: {err.strip()}")
    return block


class VinaDocker:
    """AutoDock Vina on one receptor: ``dock(smiles) -> best score`` (kcal/mol), with the receptor's maps
    computed once.

    Args:
        receptor: the structure and its box.
        exhaustiveness: Vina's search exhaustiveness (8 is Vina's default).
        seed: Vina's search seed, >= 1 (Vina draws a random seed for 0; the ligand's 3-D embedding uses seed 0).
        n_poses: poses Vina refines; the best (first) is the score.
    """

    def __init__(self, receptor: Receptor, exhaustiveness: int = 8, seed: int = 1, n_poses: int = 1):
        if exhaustiveness < 1:
            raise ValueError(f"exhaustiveness must be >= 1, got {exhaustiveness}")
        if seed < 1:
            raise ValueError(f"seed must be >= 1 (Vina picks a random seed for 0), got {seed}")
        self.receptor, self.exhaustiveness, self.seed, self.n_poses = receptor, int(exhaustiveness), int(seed), n_poses
        self._vina = None
        self.failures = 0
        self.seconds: list[float] = []
        """Wall time of every docking run (ligand preparation included)."""

    def _engine(self):
        if self._vina is None:
            from vina import Vina

            v = Vina(sf_name="vina", cpu=1, seed=self.seed, verbosity=0)
            v.set_receptor(str(self.receptor.pdbqt))
            edge = self.receptor.box_edge
            v.compute_vina_maps(center=list(self.receptor.center), box_size=[edge, edge, edge])
            self._vina = v
        return self._vina

    def dock(self, smiles: str) -> float:
        """Best Vina score of ``smiles`` in the box, clipped at 0 (the code keeps scores <= 0). A molecule that
        cannot be prepared in 3-D scores 0, the code's value for a failed docking (``failures`` counts them)."""
        t0 = time.perf_counter()
        try:
            block = ligand_pdbqt(smiles)
        except LigandPreparationError:
            self.failures += 1
            return 0.0
        v = self._engine()
        v.set_ligand_from_string(block)
        v.dock(exhaustiveness=self.exhaustiveness, n_poses=self.n_poses)
        score = float(v.energies(n_poses=1)[0][0])
        self.seconds.append(time.perf_counter() - t0)
        return min(score, 0.0)


class DockingOracle:
    """Mean best Vina score of a molecule over one or more receptors, cached by canonical SMILES.

    With one receptor this is the l1 oracle; over the crystal structures, the l2 oracle; over all structures
    at a higher exhaustiveness, our l3 stand-in.

    Args:
        structures: the receptors to average over.
        exhaustiveness: Vina exhaustiveness of every run.
        seed: Vina search seed.
        on_dock: optional callback ``on_dock(n_runs_done)`` after each docking run (progress bars).
    """

    def __init__(self, structures: Sequence[Receptor], exhaustiveness: int = 8, seed: int = 1,
                 on_dock: Callable[[int], None] | None = None):
        if not structures:
            raise ValueError("a docking oracle needs at least one receptor")
        self.dockers = [VinaDocker(r, exhaustiveness, seed) for r in structures]
        self.cache: dict[str, float] = {}
        self.on_dock = on_dock
        self.runs = 0

    def __call__(self, smiles: str) -> float:
        key = canonical_smiles(smiles)
        if key not in self.cache:
            scores = []
            for d in self.dockers:
                scores.append(d.dock(key))
                self.runs += 1
                if self.on_dock is not None:
                    self.on_dock(self.runs)
            self.cache[key] = float(np.mean(scores))
        return self.cache[key]

    @property
    def seconds(self) -> list[float]:
        """Wall time of every docking run so far, over all receptors."""
        return [s for d in self.dockers for s in d.seconds]


class LassoOracle:
    """The l0 oracle: ``Lasso(alpha)`` on Morgan fingerprints (radius 3, 2048 bits), cached by canonical SMILES.

    Args:
        alpha: L1 penalty. The official code uses scikit-learn's default ``alpha = 1``; on 0/1 fingerprint
            features and kcal/mol targets that penalty zeroes every coefficient (a constant oracle), so our
            default is 0.01 (see the docs).
    """

    def __init__(self, alpha: float = 0.01):
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        self.alpha = alpha
        self.cache: dict[str, float] = {}

    def fit(self, smiles: Sequence[str], y: Sequence[float]) -> "LassoOracle":
        y = np.asarray(y, dtype=float)
        if len(smiles) != y.size or y.size < 2:
            raise ValueError(f"fit needs one score per SMILES and at least two, got {len(smiles)} and {y.size}")
        if not np.all(np.isfinite(y)):
            raise ValueError("fit got a non-finite score")
        self.model_ = Lasso(alpha=self.alpha, max_iter=5000).fit(morgan_bits([canonical_smiles(s) for s in smiles]), y)
        self.cache.clear()
        return self

    def __call__(self, smiles: str) -> float:
        if not hasattr(self, "model_"):
            raise ValueError("LassoOracle is not fitted: call fit(smiles, scores) first")
        key = canonical_smiles(smiles)
        if key not in self.cache:
            self.cache[key] = float(self.model_.predict(morgan_bits([key]))[0])
        return self.cache[key]


@dataclass
class MultiFidelityOracle:
    """The fidelity ladder: ``query(smiles, level)`` with a cost per level and a ledger of what was spent.

    Attributes:
        oracles: one function SMILES -> score per level, cheapest first.
        costs: the cost of one query at each level (a cached molecule is charged again: each method pays for
            its own queries, as if it ran alone).
        spent: cost spent at each level; ``n_queries``: queries made at each level.
    """

    oracles: list[Callable[[str], float]]
    costs: list[float]
    spent: list[float] = field(default_factory=list)
    n_queries: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if len(self.oracles) != len(self.costs) or not self.oracles:
            raise ValueError(f"need one cost per oracle, got {len(self.oracles)} oracles and {len(self.costs)} costs")
        if any(not c > 0 for c in self.costs):
            raise ValueError(f"costs must be > 0, got {self.costs}")
        self.reset()

    @property
    def n_levels(self) -> int:
        return len(self.oracles)

    def reset(self) -> None:
        """Start a new ledger (the caches stay)."""
        self.spent = [0.0] * self.n_levels
        self.n_queries = [0] * self.n_levels

    def query(self, smiles: str, level: int) -> float:
        if not 0 <= level < self.n_levels:
            raise ValueError(f"level must be in 0..{self.n_levels - 1}, got {level}")
        value = self.oracles[level](smiles)
        self.spent[level] += self.costs[level]
        self.n_queries[level] += 1
        return value

    @property
    def total_spent(self) -> float:
        return float(sum(self.spent))


def docking_ladder(target: str = "brd4_bd2", exhaustiveness: int = 1, top_exhaustiveness: int = 4,
                   n_l2_structures: int | None = None, data_dir: str | Path | None = None,
                   on_dock: Callable[[int], None] | None = None) -> tuple[list[DockingOracle], list[float]]:
    """The l1, l2 and l3-stand-in docking oracles of ``target`` and their nominal costs.

    Cost unit: one Vina run at ``exhaustiveness`` on one receptor (Vina's search time grows about linearly with
    exhaustiveness). l1 costs 1; l2 costs the number of l2 structures; the l3 stand-in docks every structure
    at ``top_exhaustiveness`` with another search seed and costs ``n_structures * top_exhaustiveness /
    exhaustiveness``.

    Args:
        n_l2_structures: use the first ``n`` crystal structures only (CPU presets); all when ``None``.
    """
    recs = receptors(target, data_dir)
    l1 = [r for r in recs if r.fidelity == "l1"]
    l2 = [r for r in recs if r.fidelity == "l2"]
    if n_l2_structures is not None:
        if not 1 <= n_l2_structures <= len(l2):
            raise ValueError(f"n_l2_structures must be in 1..{len(l2)} for {target}, got {n_l2_structures}")
        l2 = l2[:n_l2_structures]
    if top_exhaustiveness < exhaustiveness:
        raise ValueError(f"top_exhaustiveness ({top_exhaustiveness}) must be >= exhaustiveness ({exhaustiveness})")
    oracles = [DockingOracle(l1, exhaustiveness, 1, on_dock), DockingOracle(l2, exhaustiveness, 1, on_dock),
               DockingOracle(l1 + l2, top_exhaustiveness, 2, on_dock)]
    costs = [1.0, float(len(l2)), (1 + len(l2)) * top_exhaustiveness / exhaustiveness]
    return oracles, costs

"""Chemistry helpers of MF-LAL: SMILES checks, the QED / SA / ring filter, fingerprints, SELFIES and the pool.

Everything here is plain RDKit (and ``selfies``); nothing is learned. The filter thresholds are the official
code's (``qed_cutoff = 0.2``, ``sa_cutoff = 6``, rings of 5 or 6 atoms only); the paper's own, stricter values
(QED > 0.4, SA < 4, per the code's comment) are in :data:`PAPER_FILTER`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import selfies as sf
from rdkit import Chem, DataStructs, RDConfig, RDLogger  # first: a core install names the [chem] extra
from rdkit.Chem import QED, rdFingerprintGenerator, rdMolDescriptors
from rdkit.Contrib.SA_Score import sascorer

RDLogger.DisableLog("rdApp.*")  # invalid decoded SMILES are expected; we report them ourselves


@dataclass(frozen=True)
class MoleculeFilter:
    """The validity rule of ``is_valid`` in the official ``main.py``.

    Attributes:
        qed_min: keep molecules with QED > ``qed_min``.
        sa_max: keep molecules with synthetic accessibility (Ertl & Schuffenhauer) < ``sa_max``.
        ring_sizes: every ring of the molecule must have one of these sizes.
    """

    qed_min: float = 0.2
    sa_max: float = 6.0
    ring_sizes: tuple[int, ...] = (5, 6)

    def __call__(self, smiles: str) -> bool:
        """Whether ``smiles`` parses and passes the ring, QED and SA rules (False for an unparsable SMILES)."""
        mol = Chem.MolFromSmiles(smiles) if smiles else None
        if mol is None or mol.GetNumAtoms() == 0:
            return False
        if any(len(ring) not in self.ring_sizes for ring in mol.GetRingInfo().AtomRings()):
            return False
        return QED.qed(mol) > self.qed_min and sascorer.calculateScore(mol) < self.sa_max


CODE_FILTER = MoleculeFilter(0.2, 6.0)
"""The thresholds the official code runs with (QED > 0.2, SA < 6)."""
PAPER_FILTER = MoleculeFilter(0.4, 4.0)
"""The thresholds the paper states (QED > 0.4, SA < 4; quoted in a comment of the official ``main.py``)."""


def to_mol(smiles: str) -> Chem.Mol:
    """RDKit molecule of ``smiles``; raises ``ValueError`` naming the SMILES when it does not parse or is empty."""
    if not isinstance(smiles, str) or not smiles.strip():
        raise ValueError(f"smiles must be a non-empty SMILES string, got {smiles!r}")
    mol = Chem.MolFromSmiles(smiles)
    if mol is None or mol.GetNumAtoms() == 0:
        raise ValueError(f"invalid SMILES {smiles!r}: RDKit cannot parse it")
    return mol


def canonical_smiles(smiles: str) -> str:
    """RDKit's canonical SMILES of ``smiles`` (the key of every oracle cache); ``ValueError`` if invalid."""
    return Chem.MolToSmiles(to_mol(smiles))


def qed(smiles: str) -> float:
    """Quantitative estimate of drug-likeness (Bickerton et al. 2012), in [0, 1]."""
    return float(QED.qed(to_mol(smiles)))


def sa_score(smiles: str) -> float:
    """Synthetic accessibility score (Ertl & Schuffenhauer 2009), 1 (easy) to 10 (hard); RDKit's contrib code."""
    return float(sascorer.calculateScore(to_mol(smiles)))


@lru_cache(maxsize=8)
def _morgan(radius: int, n_bits: int):
    return rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)


def morgan_bits(smiles: list[str], radius: int = 3, n_bits: int = 2048) -> np.ndarray:
    """Morgan fingerprints as a 0/1 array of shape ``(len(smiles), n_bits)``; the l0 model's features (r = 3)."""
    gen = _morgan(radius, n_bits)
    out = np.zeros((len(smiles), n_bits), dtype=np.float64)
    for i, s in enumerate(smiles):
        out[i] = gen.GetFingerprintAsNumPy(to_mol(s))
    return out


def mean_pairwise_tanimoto(smiles: list[str], radius: int = 2, n_bits: int = 2048) -> float:
    """Mean Tanimoto similarity over the distinct pairs of ``smiles`` (Morgan radius 2, as the code's
    ``tanimoto_similarity``). Lower is more diverse. NaN with fewer than two molecules.

    The official code averages over all ordered pairs including each molecule with itself (similarity 1);
    we leave the diagonal out, so a set of distinct molecules can reach 0.
    """
    if len(smiles) < 2:
        return float("nan")
    gen = _morgan(radius, n_bits)
    fps = [gen.GetFingerprint(to_mol(s)) for s in smiles]
    sims = [DataStructs.BulkTanimotoSimilarity(fps[i], fps[i + 1:]) for i in range(len(fps) - 1)]
    return float(np.mean(np.concatenate(sims)))


# ----------------------------------------------------------------------------------------------- SELFIES


class SelfiesVocab:
    """SELFIES token vocabulary, index 0 = ``[nop]`` (the padding symbol), as the official ``Data.generate_vocab``.

    Args:
        smiles: molecules whose SELFIES tokens make the vocabulary.
    """

    PAD = "[nop]"

    def __init__(self, smiles: list[str]):
        tokens: set[str] = set()
        for s in smiles:
            tokens.update(sf.split_selfies(sf.encoder(canonical_smiles(s))))
        tokens.discard(self.PAD)
        self.symbols: list[str] = [self.PAD] + sorted(tokens)
        self.index = {s: i for i, s in enumerate(self.symbols)}
        self._tokens: dict[str, list[int]] = {}

    def __len__(self) -> int:
        return len(self.symbols)

    def encode(self, smiles: str, max_len: int) -> list[int] | None:
        """Token indices of ``smiles`` padded to ``max_len``; ``None`` when it has ``>= max_len`` tokens (the code
        drops those). Tokens outside the vocabulary are dropped, as in the code."""
        if smiles not in self._tokens:
            self._tokens[smiles] = [self.index[t] for t in sf.split_selfies(sf.encoder(canonical_smiles(smiles)))
                                    if t in self.index]
        idx = self._tokens[smiles]
        if len(idx) >= max_len:
            return None
        return idx + [0] * (max_len - len(idx))

    def decode(self, indices) -> str:
        """SMILES of a token sequence (padding skipped); SELFIES makes every sequence a valid molecule,
        possibly empty (returned as ``""``)."""
        text = "".join(self.symbols[int(i)] for i in indices)
        smiles = sf.decoder(text) or ""
        mol = Chem.MolFromSmiles(smiles) if smiles else None
        return Chem.MolToSmiles(mol) if mol is not None and mol.GetNumAtoms() else ""


# ----------------------------------------------------------------------------------------------- pool

ALLOWED_ELEMENTS = frozenset({"C", "N", "O", "S", "F", "Cl", "Br"})
"""Elements kept in the pool: those with AutoDock atom types in the receptor grids (no P, I, metals)."""


@lru_cache(maxsize=4)
def nci_pool(max_heavy_atoms: int = 30, min_heavy_atoms: int = 8, max_rotatable: int = 6) -> tuple[str, ...]:
    """Drug-like molecules of the NCI set that ships with RDKit (``Data/NCI/first_5K.smi``, 4,999 compounds).

    Stands in for the paper's ZINC250k pool (not available offline). Kept: one fragment, neutral, elements in
    :data:`ALLOWED_ELEMENTS`, ``min_heavy_atoms``..``max_heavy_atoms`` heavy atoms, at most ``max_rotatable``
    rotatable bonds, and passing the code's filter :data:`CODE_FILTER`. Canonical SMILES, file order, no
    duplicates.
    """
    path = os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")
    out: dict[str, None] = {}
    with open(path) as fh:
        for line in fh:
            parts = line.split()
            mol = Chem.MolFromSmiles(parts[0]) if parts else None
            if mol is None or "." in parts[0]:
                continue
            if not (min_heavy_atoms <= mol.GetNumHeavyAtoms() <= max_heavy_atoms):
                continue
            if any(a.GetSymbol() not in ALLOWED_ELEMENTS or a.GetFormalCharge() for a in mol.GetAtoms()):
                continue
            if rdMolDescriptors.CalcNumRotatableBonds(mol) > max_rotatable:
                continue
            smi = Chem.MolToSmiles(mol)
            if CODE_FILTER(smi):
                out[smi] = None
    return tuple(out)

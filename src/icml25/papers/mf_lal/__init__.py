"""MF-LAL (Eckmann, Wu, Heinzelmann, Gilson & Yu, ICML 2025, arXiv 2410.11226).

Multi-fidelity latent space active learning for drug design: one SELFIES VAE with a latent space, a decoder
and a sparse variational GP surrogate per oracle fidelity; an acquisition optimised in the latent spaces,
chained from the cheapest fidelity up; and a rule that moves to the next, costlier fidelity when the surrogate
is confident or after a fixed number of queries. The oracles here are real chemistry: a Lasso on Morgan
fingerprints, AutoDock Vina on one receptor, the mean over crystal structures, and a consensus-docking
stand-in for absolute binding free energy.
"""

# the chemistry stack first: without the `chem` extra (RDKit, AutoDock Vina, meeko; it installs PyTorch too) the
# import error then names that extra, not PyTorch alone
from icml25.papers.mf_lal.chem import (
    CODE_FILTER,
    PAPER_FILTER,
    MoleculeFilter,
    SelfiesVocab,
    canonical_smiles,
    mean_pairwise_tanimoto,
    morgan_bits,
    nci_pool,
    qed,
    sa_score,
)

# isort: split
from icml25.papers.mf_lal.active_learning import (
    Generation,
    History,
    LevelData,
    MFLALSettings,
    acquisition_loss,
    acquisition_points,
    gaussian_density,
    generate,
    make_level_data,
    run_active_learning,
    run_random_prior,
    sample_prior,
    should_move_up,
    train_passes,
    train_prior_vae,
)
from icml25.papers.mf_lal.model import MFLAL, SVGP, level_loss
from icml25.papers.mf_lal.oracles import (
    TARGETS,
    DockingOracle,
    LassoOracle,
    LigandPreparationError,
    MultiFidelityOracle,
    Receptor,
    VinaDocker,
    docking_ladder,
    ligand_pdbqt,
    receptors,
)

__all__ = [
    "CODE_FILTER", "DockingOracle", "Generation", "History", "LassoOracle", "LevelData", "LigandPreparationError", "MFLAL", "MFLALSettings",
    "MoleculeFilter", "MultiFidelityOracle", "PAPER_FILTER", "Receptor", "SVGP", "SelfiesVocab", "TARGETS",
    "VinaDocker", "acquisition_loss", "acquisition_points", "canonical_smiles", "docking_ladder",
    "gaussian_density", "generate", "level_loss", "ligand_pdbqt", "make_level_data", "mean_pairwise_tanimoto",
    "morgan_bits", "nci_pool", "qed", "receptors", "run_active_learning", "run_random_prior", "sa_score",
    "sample_prior", "should_move_up", "train_passes", "train_prior_vae",
]

"""NeuralCPM: Deep Neural Cellular Potts Models (Minartz et al., ICML 2025, arXiv 2502.02129).

A cellular Potts model whose Hamiltonian is a cell-permutation-invariant neural network (or a hybrid
of the Graner-Glazier symbolic energy and such a network), trained on lattice snapshots as an
energy-based model by short-run persistent MCMC.
"""

from icml25.papers.neuralcpm.cpm import (
    CellsortHamiltonian,
    cell_shape_stats,
    checkerboard_cpm,
    contact_matrix,
    metropolis_cpm,
    parallel_cellsort_cpm,
    random_init,
    sorting_index,
    volumes,
)
from icml25.papers.neuralcpm.neural import (
    ClosureHamiltonian,
    NeuralCPMConfig,
    NeuralHamiltonian,
    SymbolicFitConfig,
    SymbolicHamiltonian,
    fit_symbolic,
    parallel_cpm,
    permute_cell_ids,
    train_ebm,
)

__all__ = [
    "CellsortHamiltonian", "ClosureHamiltonian", "NeuralCPMConfig", "NeuralHamiltonian", "SymbolicFitConfig",
    "SymbolicHamiltonian", "cell_shape_stats", "checkerboard_cpm", "contact_matrix", "fit_symbolic", "metropolis_cpm",
    "parallel_cellsort_cpm", "parallel_cpm", "permute_cell_ids", "random_init", "sorting_index", "train_ebm", "volumes",
]

"""NAIAD: single-effect encoder + adaptive gene embeddings for pairwise perturbation phenotypes.

Qin, Wessels, Fernandez-Granda & Hao, "Active Learning for Efficient Discovery of
Optimal Combinatorial Perturbations", ICML 2025 (arXiv 2411.12010). Official code:
NeptuneBio/NAIAD (``MLPEmbedPheno`` with ``model_type='both'``, ``embed_model='MLP'``).

For a pair (a, b) with single-gene phenotypes (s_a, s_b):

    h_g   = Lin(d,d) -> Dropout -> ReLU -> Lin(d,d)  applied to E[g]          (gene branch)
    y_emb = Lin(d,d) -> Dropout -> ReLU -> Lin(d,1)  applied to h_a + h_b     (order-invariant)
    y_phe = Lin(2,H,no bias) -> Dropout -> GELU -> Lin(H,H,no bias) -> Dropout -> GELU -> Lin(H,1)
    y_hat = y_emb + y_phe

The embedding size d adapts to the data (the paper's key idea): with r = n_train / n_genes
(how often each gene is seen), d is read from a table that gives d = 2 when genes are seen
once or twice and d = 128 when seen more than 80 times. Few data: NAIAD is essentially a
nonlinear function of the single effects; more data: embeddings learn gene-specific
interactions.

Training (official defaults): Adam, lr 1e-2, no weight decay, summed squared error,
batches of 1024 in a fixed order, linear warm-up over the first 10% of the steps then a
linear decay to 0.1 of the learning rate; the weights with the best validation loss are
kept when a validation set is given.
"""

from __future__ import annotations

import copy
import math
from bisect import bisect_left

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from torch import nn

from icml25.papers.naiad.data import check_pairs_single

EMBED_DIM_TABLE: dict[int, int] = {0: 2, 2: 2, 4: 4, 10: 16, 20: 16, 30: 32, 40: 64, 60: 64, 80: 128, 100: 128}
"""Times each gene is seen in training (n_train / n_genes) -> embedding size (official ``n_gene_seen``)."""

MODES = ("both", "pheno", "embed")


def adaptive_embed_dim(n_train: int, n_genes: int) -> int:
    """Embedding size for ``n_train`` training pairs over ``n_genes`` genes.

    With ``r = n_train / n_genes``, returns ``EMBED_DIM_TABLE[k]`` for the largest key
    ``k < r`` (strictly), as in the official code: 2 for r in (0, 4], 4 for (4, 10],
    16 for (10, 30], 32 for (30, 40], 64 for (40, 80], 128 above 80. The official code
    fails for r <= 0; here ``n_train = 0`` returns the smallest size, 2.
    """
    if n_train < 0:
        raise ValueError(f"n_train must be >= 0, got {n_train}")
    if n_genes < 1:
        raise ValueError(f"n_genes must be >= 1, got {n_genes}")
    keys = sorted(EMBED_DIM_TABLE)
    r = n_train / n_genes
    i = bisect_left(keys, r) - 1  # index of the largest key strictly below r
    return EMBED_DIM_TABLE[keys[max(i, 0)]]


def warmup_linear_lr_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """Learning-rate multiplier at optimiser step ``step`` (official ``create_lr_scheduler``).

    ``(step + 1) / W`` during warm-up (``step < W``), then ``0.1 + 0.9 (T - step) / (T - W)``:
    1/W at step 0, 1 at step W - 1, 0.1 at step T.
    """
    if warmup_steps < 1 or total_steps <= warmup_steps:
        raise ValueError(f"need 1 <= warmup_steps < total_steps, got {warmup_steps}, {total_steps}")
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return 0.1 + 0.9 * (total_steps - step) / (total_steps - warmup_steps)


class NAIADNet(nn.Module):
    """The NAIAD network: gene-embedding branch + single-effect branch, summed.

    Args:
        n_genes: size of the gene vocabulary (rows of the embedding table E).
        d_embed: embedding size d (see :func:`adaptive_embed_dim`).
        d_pheno_hid: hidden width H of the single-effect branch (256 in NAIAD).
        p_dropout: dropout probability in both branches.
        mode: ``'both'`` (NAIAD), ``'pheno'`` (single-effect branch only) or ``'embed'``
            (gene-embedding branch only).
    """

    def __init__(self, n_genes: int, d_embed: int, d_pheno_hid: int = 256, p_dropout: float = 0.1,
                 mode: str = "both") -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if n_genes < 1 or d_embed < 1 or d_pheno_hid < 1:
            raise ValueError(f"n_genes, d_embed and d_pheno_hid must be >= 1, got {n_genes}, {d_embed}, {d_pheno_hid}")
        if not 0 <= p_dropout < 1:
            raise ValueError(f"p_dropout must be in [0, 1), got {p_dropout}")
        self.n_genes, self.d_embed, self.mode = n_genes, d_embed, mode
        d, h = d_embed, d_pheno_hid
        if mode in ("both", "embed"):
            self.embedding = nn.Embedding(n_genes, d)
            self.gene_ffn = nn.Sequential(nn.Linear(d, d), nn.Dropout(p_dropout), nn.ReLU(), nn.Linear(d, d))
            self.pair_head = nn.Sequential(nn.Linear(d, d), nn.Dropout(p_dropout), nn.ReLU(), nn.Linear(d, 1))
        if mode in ("both", "pheno"):
            self.pheno_ffn = nn.Sequential(
                nn.Linear(2, h, bias=False), nn.Dropout(p_dropout), nn.GELU(),
                nn.Linear(h, h, bias=False), nn.Dropout(p_dropout), nn.GELU(),
                nn.Linear(h, 1),
            )

    def forward_embed(self, pairs: torch.Tensor) -> torch.Tensor:
        """y_emb of shape (n,) from gene ids (n, 2): head(h_a + h_b), symmetric in (a, b)."""
        h = self.gene_ffn(self.embedding(pairs))  # (n, 2, d)
        return self.pair_head(h.sum(dim=1)).squeeze(-1)

    def forward_pheno(self, single: torch.Tensor) -> torch.Tensor:
        """y_phe of shape (n,) from the single-gene phenotypes (n, 2)."""
        return self.pheno_ffn(single).squeeze(-1)

    def forward(self, pairs: torch.Tensor, single: torch.Tensor | None = None) -> torch.Tensor:
        """Predicted pair phenotype y_hat (n,) = y_emb + y_phe (or one branch, per ``mode``)."""
        if self.mode == "embed":
            return self.forward_embed(pairs)
        if single is None:
            raise ValueError(f"mode {self.mode!r} needs the single-gene phenotypes")
        if self.mode == "pheno":
            return self.forward_pheno(single)
        return self.forward_embed(pairs) + self.forward_pheno(single)


def _permute_columns(single: np.ndarray, seed: int) -> np.ndarray:
    """Put the two single effects of every row in a random order (fixed generator).

    The official dataset does this with a torch generator seeded 0 for every split, so the
    single-effect branch cannot rely on the column order.
    """
    gen = torch.Generator().manual_seed(seed)
    order = torch.argsort(torch.rand(single.shape, generator=gen), dim=-1).numpy()
    return np.take_along_axis(single, order, axis=1)


class NAIADRegressor(BaseEstimator, RegressorMixin):
    """scikit-learn style NAIAD model: ``fit(pairs, single, y)``, ``predict(pairs, single)``.

    Args:
        n_epoch: passes over the training data (100 in the official tutorial).
        lr: Adam learning rate of both branches (1e-2).
        batch_size: rows per optimiser step (1024).
        d_embed: embedding size, or ``'auto'`` for :func:`adaptive_embed_dim` of
            (n_train, n_genes).
        seed: seed of the weight initialisation and dropout.
        n_genes: size of the gene vocabulary; default ``max id + 1`` over the fit data.
            Set it to the number of genes of the whole screen so that unseen genes can be
            predicted and ``'auto'`` uses the same ratio as the official code.
        d_pheno_hid: width H of the single-effect branch (256).
        p_dropout: dropout probability (0.1).
        mode: ``'both'`` (NAIAD), ``'pheno'`` or ``'embed'`` (ablations).
        weight_decay: Adam weight decay (0).
        device: torch device.

    Attributes after ``fit``: ``model_`` (the :class:`NAIADNet`, best-validation weights when a
    validation set is given), ``d_embed_``, ``n_genes_``, ``train_loss_`` and ``val_loss_``
    (per-epoch mean squared errors), ``best_epoch_``.
    """

    def __init__(self, n_epoch: int = 100, lr: float = 1e-2, batch_size: int = 1024, d_embed="auto", seed: int = 0,
                 n_genes: int | None = None, d_pheno_hid: int = 256, p_dropout: float = 0.1, mode: str = "both",
                 weight_decay: float = 0.0, device: str = "cpu") -> None:
        self.n_epoch = n_epoch
        self.lr = lr
        self.batch_size = batch_size
        self.d_embed = d_embed
        self.seed = seed
        self.n_genes = n_genes
        self.d_pheno_hid = d_pheno_hid
        self.p_dropout = p_dropout
        self.mode = mode
        self.weight_decay = weight_decay
        self.device = device

    def _check_params(self) -> None:
        if int(self.n_epoch) < 1:
            raise ValueError(f"n_epoch must be >= 1, got {self.n_epoch}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if int(self.batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.d_embed != "auto" and (not isinstance(self.d_embed, (int, np.integer)) or self.d_embed < 1):
            raise ValueError(f"d_embed must be 'auto' or a positive int, got {self.d_embed!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")

    def _tensors(self, pairs: np.ndarray, single: np.ndarray):
        dev = torch.device(self.device)
        return (torch.as_tensor(pairs, device=dev),
                torch.as_tensor(_permute_columns(single, 0), device=dev))

    def fit(self, pairs, single, y, X_val=None, y_val=None) -> "NAIADRegressor":
        """Train on pairs (n, 2), single effects (n, 2) and phenotypes y (n,).

        ``X_val = (pairs_val, single_val)`` with ``y_val`` selects the epoch with the lowest
        validation MSE (early-stopping model selection, as the official ``best_model``).
        """
        self._check_params()
        pairs, single = check_pairs_single(pairs, single, self.n_genes)
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (pairs.shape[0],) or not np.all(np.isfinite(y)):
            raise ValueError(f"y must be a finite array of shape ({pairs.shape[0]},), got shape {y.shape}")
        has_val = X_val is not None
        if has_val != (y_val is not None):
            raise ValueError("give both X_val=(pairs_val, single_val) and y_val, or neither")
        n_genes = self.n_genes if self.n_genes is not None else int(pairs.max()) + 1
        if has_val:
            pv, sv = check_pairs_single(*X_val, n_genes)
            yv = np.asarray(y_val, dtype=np.float64)
            if yv.shape != (pv.shape[0],) or not np.all(np.isfinite(yv)):
                raise ValueError(f"y_val must be a finite array of shape ({pv.shape[0]},), got shape {yv.shape}")
        n = pairs.shape[0]
        d = adaptive_embed_dim(n, n_genes) if self.d_embed == "auto" else int(self.d_embed)
        self.n_genes_, self.d_embed_ = int(n_genes), d

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = NAIADNet(n_genes, d, self.d_pheno_hid, self.p_dropout, self.mode).to(self.device)
            opt = torch.optim.Adam(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            steps_per_epoch = math.ceil(n / self.batch_size)
            total = int(self.n_epoch) * steps_per_epoch
            warm = max(1, total // 10)
            if total <= warm:  # fewer than two steps: no decay phase
                total = warm + 1
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: warmup_linear_lr_factor(t, warm, total))
            g, s = self._tensors(pairs, single)
            t = torch.as_tensor(y, dtype=torch.float32, device=g.device)
            if has_val:
                gv, svt = self._tensors(pv, sv)
                tv = torch.as_tensor(yv, dtype=torch.float32, device=g.device)
            best, best_state, self.train_loss_, self.val_loss_ = math.inf, None, [], []
            self.best_epoch_ = int(self.n_epoch) - 1
            for epoch in range(int(self.n_epoch)):
                model.train()
                run = 0.0
                for lo in range(0, n, self.batch_size):  # fixed order, as the official DataLoader(shuffle=False)
                    sl = slice(lo, lo + self.batch_size)
                    loss = ((model(g[sl], s[sl]) - t[sl]) ** 2).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    sched.step()
                    run += float(loss.detach())
                self.train_loss_.append(run / n)
                if has_val:
                    model.eval()
                    with torch.no_grad():
                        vl = float(((model(gv, svt) - tv) ** 2).mean())
                    self.val_loss_.append(vl)
                    if vl < best:
                        best, best_state, self.best_epoch_ = vl, copy.deepcopy(model.state_dict()), epoch
            if best_state is not None:
                model.load_state_dict(best_state)
        model.eval()
        self.model_ = model
        return self

    def predict(self, pairs, single) -> np.ndarray:
        """Predicted phenotypes (n,) of the pairs (n, 2) with single effects (n, 2)."""
        if not hasattr(self, "model_"):
            raise ValueError("this NAIADRegressor is not fitted yet: call fit first")
        pairs, single = check_pairs_single(pairs, single, self.n_genes_)
        g, s = self._tensors(pairs, single)
        with torch.no_grad():
            return self.model_(g, s).double().cpu().numpy()


class SingleEffectLinearRegressor(BaseEstimator, RegressorMixin):
    """Least-squares baseline on the single effects: y ~ b0 + b1 (s_a + s_b) [+ b2 s_a s_b].

    ``product_term=False`` is the additive model (the official ``linear`` column fits the two
    single-effect columns; with randomised column order this is the same model);
    ``product_term=True`` adds the multiplicative (epistasis) term.
    """

    def __init__(self, product_term: bool = False) -> None:
        self.product_term = product_term

    def _features(self, single: np.ndarray) -> np.ndarray:
        cols = [np.ones(single.shape[0]), single.sum(axis=1)]
        if self.product_term:
            cols.append(single[:, 0] * single[:, 1])
        return np.stack(cols, axis=1).astype(np.float64)

    def fit(self, pairs, single, y) -> "SingleEffectLinearRegressor":
        """Least-squares fit; ``pairs`` is accepted for API symmetry and checked, not used."""
        pairs, single = check_pairs_single(pairs, single)
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (pairs.shape[0],) or not np.all(np.isfinite(y)):
            raise ValueError(f"y must be a finite array of shape ({pairs.shape[0]},), got shape {y.shape}")
        self.coef_ = np.linalg.lstsq(self._features(single), y, rcond=None)[0]
        return self

    def predict(self, pairs, single) -> np.ndarray:
        """Predicted phenotypes (n,)."""
        if not hasattr(self, "coef_"):
            raise ValueError("this SingleEffectLinearRegressor is not fitted yet: call fit first")
        _, single = check_pairs_single(pairs, single)
        return self._features(single) @ self.coef_

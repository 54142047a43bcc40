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
batches of 1024 in a fixed order, linear warm-up over the first int(T/10) of the T steps
(none below 10 steps) then a linear decay to 0.1 of the learning rate; the weights with the
best validation loss are kept when a validation set is given. The two single effects of each
training row are put in a random order (fixed generator); predictions average both orders.
"""

from __future__ import annotations

import copy
import itertools
import math
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data
from torch import nn

from icml25.common.checks import ConfigError, check_ranges
from icml25.papers.naiad.data import check_pairs, check_pairs_single

EMBED_DIM_TABLE: dict[int, int] = {0: 2, 2: 2, 4: 4, 10: 16, 20: 16, 30: 32, 40: 64, 60: 64, 80: 128, 100: 128}
"""Times each gene is seen in training (n_train / n_genes) -> embedding size (official ``n_gene_seen``)."""

MODES = ("both", "pheno", "embed")


@dataclass
class NAIADConfig:
    """Training settings of NAIAD (:class:`NAIADRegressor`), as an experiment sets them (``--set model.n_epoch=...``).

    Defaults are the official ``NAIAD`` trainer's (naiad.py: Adam lr 1e-2, weight decay 0, batches of
    1024, H = 256, dropout 0.1; the tutorial's 100 epochs; the package's adaptive embedding table).
    :meth:`NAIADRegressor.from_config` builds the estimator from it.
    """

    n_epoch: int = 100
    """Passes over the training data (official tutorial: 100; Table 1 notebook on Norman: 500; Fig. 4: 200)."""
    lr: float = 1e-2
    """Adam learning rate of both branches (official 1e-2)."""
    batch_size: int = 1024
    """Rows per optimiser step (official 1024; the Fig. 4 notebook: 4096)."""
    d_pheno_hid: int = 256
    """Width H of the single-effect branch (official 256; the Table 1 and Fig. 4 notebooks on Norman: 64)."""
    p_dropout: float = 0.1
    """Dropout probability in both branches, in [0, 1) (official 0.1)."""
    weight_decay: float = 0.0
    """Adam weight decay (official 0)."""
    d_embed: tuple[int, ...] = ()
    """Hand-set embedding sizes, one per training size or active-learning round (the notebooks' schedules);
    empty: the package's adaptive table (:func:`adaptive_embed_dim`)."""

    def __post_init__(self) -> None:
        # bounds: H x H layers and a Python loop over epochs; beyond these a job needs > ~100 GB or days
        where = type(self).__name__
        check_ranges(where, vars(self), integer=("n_epoch", "batch_size", "d_pheno_hid", "d_embed"),
                     finite=("lr", "p_dropout", "weight_decay"),
                     positive=("n_epoch", "lr", "batch_size", "d_pheno_hid", "d_embed"),
                     nonnegative=("p_dropout", "weight_decay"),
                     at_most={"n_epoch": 10**6, "batch_size": 10**7, "d_pheno_hid": 10**4, "d_embed": 10**4})
        if not self.p_dropout < 1:
            raise ConfigError(f"{where}.p_dropout must be in [0, 1), got {self.p_dropout!r}")


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
    1/W at step 0, 1 at step W - 1, 0.1 at step T. The official trainer passes ``W = int(T / 10)``,
    so with fewer than 10 steps ``W = 0``: no warm-up, the decay starts at 1 (T = 5: 1.0, 0.82,
    0.64, 0.46, 0.28).
    """
    if warmup_steps < 0 or total_steps <= warmup_steps:
        raise ValueError(f"need 0 <= warmup_steps < total_steps, got {warmup_steps}, {total_steps}")
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
        n_single: inputs of the single-effect branch (NAIAD: 2, the phenotypes s_a, s_b).

    ``forward(pairs, single)`` takes integer gene ids ``pairs`` (n, 2) and ``single``
    (n, n_single) on the module's device; the output (n,) has the parameters' dtype.
    """

    def __init__(self, n_genes: int, d_embed: int, d_pheno_hid: int = 256, p_dropout: float = 0.1,
                 mode: str = "both", n_single: int = 2) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if n_genes < 1 or d_embed < 1 or d_pheno_hid < 1 or n_single < 1:
            raise ValueError(f"n_genes, d_embed, d_pheno_hid and n_single must be >= 1, got {n_genes}, {d_embed}, "
                             f"{d_pheno_hid}, {n_single}")
        if not 0 <= p_dropout < 1:
            raise ValueError(f"p_dropout must be in [0, 1), got {p_dropout}")
        self.n_genes, self.d_embed, self.mode, self.n_single = n_genes, d_embed, mode, n_single
        d, h = d_embed, d_pheno_hid
        if mode in ("both", "embed"):
            self.embedding = nn.Embedding(n_genes, d)
            self.gene_ffn = nn.Sequential(nn.Linear(d, d), nn.Dropout(p_dropout), nn.ReLU(), nn.Linear(d, d))
            self.pair_head = nn.Sequential(nn.Linear(d, d), nn.Dropout(p_dropout), nn.ReLU(), nn.Linear(d, 1))
        if mode in ("both", "pheno"):
            self.pheno_ffn = nn.Sequential(
                nn.Linear(n_single, h, bias=False), nn.Dropout(p_dropout), nn.GELU(),
                nn.Linear(h, h, bias=False), nn.Dropout(p_dropout), nn.GELU(),
                nn.Linear(h, 1),
            )

    def forward_embed(self, pairs: torch.Tensor) -> torch.Tensor:
        """y_emb of shape (n,) from gene ids (n, 2): head(h_a + h_b), symmetric in (a, b)."""
        if pairs.is_floating_point() or pairs.is_complex() or pairs.ndim != 2 or pairs.shape[-1] != 2:
            raise TypeError(f"pairs must be an integer tensor of shape (n, 2), got {pairs.dtype} {tuple(pairs.shape)}")
        h = self.gene_ffn(self.embedding(pairs))  # (n, 2, d)
        return self.pair_head(h.sum(dim=1)).squeeze(-1)

    def forward_pheno(self, single: torch.Tensor) -> torch.Tensor:
        """y_phe of shape (n,) from the single-gene phenotypes (n, n_single)."""
        if single.ndim != 2 or single.shape[-1] != self.n_single:
            raise ValueError(f"single must have shape (n, {self.n_single}), got {tuple(single.shape)}")
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


def _column_orders(k: int) -> list[tuple[int, ...]]:
    """The orders of k exchangeable single-effect columns averaged at prediction time.

    Every order for k <= 4 (k = 2: both), the k cyclic shifts for larger k.
    """
    if k <= 4:
        return list(itertools.permutations(range(k)))
    return [tuple((i + j) % k for i in range(k)) for j in range(k)]


def _symmetric_forward(model: nn.Module, pairs: torch.Tensor, single: torch.Tensor) -> torch.Tensor:
    """Model output averaged over the orders of the single-effect columns (one batched forward).

    Training shows the single-effect branch its two inputs in a random order per row (the official
    loader's shuffle), so the learned function is exchangeable only approximately. The official code
    also predicts with the row-index-dependent random order, which makes a pair's prediction depend on
    where it sits in the input; averaging over the orders makes it a function of the pair alone
    (exactly symmetric in (s_a, s_b), the expectation of the prediction over the training shuffle).
    """
    orders = _column_orders(single.shape[1])
    if len(orders) == 1:
        return model(pairs, single)
    n = pairs.shape[0]
    out = model(pairs.repeat(len(orders), 1), torch.cat([single[:, list(o)] for o in orders]))
    return out.reshape(len(orders), n).mean(dim=0)


def _split_design(X: np.ndarray, n_genes: int | None, name: str = "X") -> tuple[np.ndarray, np.ndarray]:
    """``X`` (n, 2 + k) as gene-id pairs (int64, (n, 2)) and single effects (float32, (n, k))."""
    if X.shape[1] < 2:
        raise ValueError(f"{name} needs the two gene-id columns first (then the single effects), "
                         f"got n_features = {X.shape[1]}")
    return check_pairs(X[:, :2], n_genes), X[:, 2:].astype(np.float32)


def _check_y(y, n: int, name: str = "y") -> np.ndarray:
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (n,) or not np.all(np.isfinite(y)):
        raise ValueError(f"{name} must be a finite array of shape ({n},), got shape {y.shape}")
    return y


class _PairTags:
    """scikit-learn tags shared by the pair regressors."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True  # the two gene-id columns are integer codes
        tags.regressor_tags.poor_score = True  # the checks' generic data are not a perturbation screen
        return tags


class NAIADRegressor(_PairTags, RegressorMixin, BaseEstimator):
    """scikit-learn NAIAD model: ``fit(X, y)`` and ``predict(X)`` on one row per gene pair.

    Layout of ``X``, shape (n, 2 + k): columns 0 and 1 are the two gene ids of the pair
    (non-negative integers below ``n_genes``), columns 2.. the pair's k single-effect
    features, in NAIAD k = 2: the single-gene phenotypes s_a and s_b. The single-effect
    branch sees them in a random order per row during training (the official loader's shuffle),
    so it treats them as exchangeable; ``predict`` and the validation loss average the network
    over both orders (all orders of k <= 4 columns), so a pair's prediction does not depend on
    the row order of ``X`` (the official code predicts with the row-index-dependent order).
    With k = 0 (ids only) mode ``'both'`` is the embedding branch alone: a single-effect
    branch without inputs is a constant, which the embedding head's bias already is.

    The three-array form of earlier versions still works: ``fit(pairs, single, y,
    X_val=(pairs_val, single_val), y_val=...)`` and ``predict(pairs, single)`` (the same as
    :meth:`fit_pairs` and :meth:`predict_pairs`), with ``pairs`` (n, 2) and ``single`` (n, 2).

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
        device: torch device; inputs and outputs are NumPy arrays on the host.

    Attributes after ``fit``: ``model_`` (the :class:`NAIADNet`, best-validation weights when a
    validation set is given), ``d_embed_``, ``n_genes_``, ``n_single_`` (k), ``mode_`` (the
    branches used), ``train_loss_`` and ``val_loss_`` (per-epoch mean squared errors),
    ``best_epoch_``, ``n_features_in_`` (2 + k; the (X, y) form only).
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

    @classmethod
    def from_config(cls, config: NAIADConfig, **params) -> "NAIADRegressor":
        """The estimator with ``config``'s training settings; ``params`` sets the others (``d_embed``, ``seed``,
        ``n_genes``, ``mode``, ``device``). ``config.d_embed`` (a schedule) is the caller's to apply."""
        return cls(n_epoch=config.n_epoch, lr=config.lr, batch_size=config.batch_size, d_pheno_hid=config.d_pheno_hid,
                   p_dropout=config.p_dropout, weight_decay=config.weight_decay, **params)

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

    def _tensors(self, pairs: np.ndarray, single: np.ndarray, shuffle: bool = True):
        """Tensors on the device; ``shuffle`` puts each row's single effects in the official random order."""
        dev = torch.device(self.device)
        return (torch.as_tensor(pairs, device=dev),
                torch.as_tensor(_permute_columns(single, 0) if shuffle else single, device=dev))

    def fit(self, X, y, *legacy, X_val=None, y_val=None) -> "NAIADRegressor":
        """Train on ``X`` (n, 2 + k) (the layout of the class docstring) and phenotypes ``y`` (n,).

        ``X_val`` (same layout) with ``y_val`` selects the epoch with the lowest validation
        MSE (early-stopping model selection, as the official ``best_model``). Called as
        ``fit(pairs, single, y, ...)`` it is :meth:`fit_pairs`.
        """
        if legacy:
            if len(legacy) > 3:
                raise TypeError(f"fit takes (X, y) or (pairs, single, y, X_val, y_val), got {2 + len(legacy)} arrays")
            rest = dict(zip(("X_val", "y_val"), legacy[1:]))
            return self.fit_pairs(X, y, legacy[0], X_val=rest.get("X_val", X_val), y_val=rest.get("y_val", y_val))
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        pairs, single = _split_design(X, self.n_genes)
        n_genes = self.n_genes if self.n_genes is not None else int(pairs.max()) + 1
        val = None
        if (X_val is None) != (y_val is None):
            raise ValueError("give both X_val and y_val, or neither")
        if X_val is not None:
            Xv = check_array(X_val, dtype=np.float64, input_name="X_val")
            if Xv.shape[1] != X.shape[1]:
                raise ValueError(f"X_val has {Xv.shape[1]} columns but X has {X.shape[1]}")
            pv, sv = _split_design(Xv, n_genes, "X_val")
            val = (pv, sv, _check_y(y_val, pv.shape[0], "y_val"))
        return self._train(pairs, single, y, val, n_genes)

    def fit_pairs(self, pairs, single, y, X_val=None, y_val=None) -> "NAIADRegressor":
        """Train on pairs (n, 2), single effects (n, 2) and phenotypes y (n,).

        ``X_val = (pairs_val, single_val)`` with ``y_val`` selects the epoch with the lowest
        validation MSE (early-stopping model selection, as the official ``best_model``).
        """
        self._check_params()
        pairs, single = check_pairs_single(pairs, single, self.n_genes)
        y = _check_y(y, pairs.shape[0])
        if (X_val is None) != (y_val is None):
            raise ValueError("give both X_val=(pairs_val, single_val) and y_val, or neither")
        n_genes = self.n_genes if self.n_genes is not None else int(pairs.max()) + 1
        val = None
        if X_val is not None:
            pv, sv = check_pairs_single(*X_val, n_genes)
            val = (pv, sv, _check_y(y_val, pv.shape[0], "y_val"))
        if hasattr(self, "n_features_in_"):
            del self.n_features_in_  # a refit in this form forgets the (X, y) layout
        return self._train(pairs, single, y, val, n_genes)

    def _train(self, pairs: np.ndarray, single: np.ndarray, y: np.ndarray, val, n_genes: int) -> "NAIADRegressor":
        """The official training recipe on validated arrays; ``val`` is ``(pairs, single, y)`` or ``None``."""
        n, k = single.shape
        mode = "embed" if k == 0 and self.mode == "both" else self.mode
        if k == 0 and mode == "pheno":
            raise ValueError("mode 'pheno' needs single-effect columns after the two gene ids")
        d = adaptive_embed_dim(n, n_genes) if self.d_embed == "auto" else int(self.d_embed)
        self.n_genes_, self.d_embed_, self.n_single_, self.mode_ = int(n_genes), d, k, mode

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            model = NAIADNet(n_genes, d, self.d_pheno_hid, self.p_dropout, mode, n_single=max(k, 1)).to(self.device)
            opt = torch.optim.Adam(model.parameters(), lr=self.lr, weight_decay=self.weight_decay)
            steps_per_epoch = math.ceil(n / self.batch_size)
            total = int(self.n_epoch) * steps_per_epoch
            warm = total // 10  # official int(T / 10): no warm-up below 10 steps
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda t: warmup_linear_lr_factor(t, warm, total))
            g, s = self._tensors(pairs, single)
            t = torch.as_tensor(y, dtype=torch.float32, device=g.device)
            if val is not None:
                gv, svt = self._tensors(val[0], val[1], shuffle=False)
                tv = torch.as_tensor(val[2], dtype=torch.float32, device=g.device)
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
                if val is not None:
                    model.eval()
                    with torch.no_grad():
                        vl = float(((_symmetric_forward(model, gv, svt) - tv) ** 2).mean())
                    self.val_loss_.append(vl)
                    if vl < best:
                        best, best_state, self.best_epoch_ = vl, copy.deepcopy(model.state_dict()), epoch
            if best_state is not None:
                model.load_state_dict(best_state)
        model.eval()
        self.model_ = model
        return self

    def predict(self, X, single=None) -> np.ndarray:
        """Predicted phenotypes (n,) of the rows of ``X`` (n, 2 + k), the layout used in ``fit``.

        Called as ``predict(pairs, single)`` it is :meth:`predict_pairs`.
        """
        if single is not None:
            return self.predict_pairs(X, single)
        check_is_fitted(self, "model_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if X.shape[1] != 2 + self.n_single_:
            raise ValueError(f"X must have {2 + self.n_single_} columns (two gene ids, {self.n_single_} single "
                             f"effects), got {X.shape[1]}")
        return self._predict(*_split_design(X, self.n_genes_))

    def predict_pairs(self, pairs, single) -> np.ndarray:
        """Predicted phenotypes (n,) of the pairs (n, 2) with single effects (n, 2)."""
        check_is_fitted(self, "model_")
        if self.n_single_ != 2:
            raise ValueError(f"this model was fitted on {self.n_single_} single-effect columns; use predict(X)")
        return self._predict(*check_pairs_single(pairs, single, self.n_genes_))

    def _predict(self, pairs: np.ndarray, single: np.ndarray) -> np.ndarray:
        g, s = self._tensors(pairs, single, shuffle=False)
        with torch.no_grad():
            return _symmetric_forward(self.model_, g, s).double().cpu().numpy()


class SingleEffectLinearRegressor(_PairTags, RegressorMixin, BaseEstimator):
    """Least-squares baseline on the single effects: y ~ b0 + b1 s_a + b2 s_b [+ b3 s_a s_b].

    The default is the official ``linear`` baseline (scikit-learn ``LinearRegression`` on the two
    single-effect columns ``id1_score, id2_score``): one free coefficient per column. With the
    columns in a random order per row (the official loader's ``shuffle_ids``, and our
    :func:`make_synthetic_screen`) the two coefficients agree only in expectation.

    Args:
        product_term: add the multiplicative (epistasis) term ``prod_k s_k`` (ours, beyond the
            official baseline).
        tied: one shared coefficient on ``s_a + s_b`` instead of one per column (the model of
            earlier versions of this package; exchangeable in the two genes by construction).

    Input: ``X`` in the layout of :class:`NAIADRegressor` (two gene-id columns, then the k
    single effects; the ids are checked but not used), or the three-array form
    ``fit(pairs, single, y)`` / ``predict(pairs, single)``. Attribute ``coef_``: the
    least-squares coefficients, intercept first (then the k columns, or their sum when
    ``tied``, then the product).
    """

    def __init__(self, product_term: bool = False, tied: bool = False) -> None:
        self.product_term = product_term
        self.tied = tied

    def _features(self, single: np.ndarray) -> np.ndarray:
        cols = [np.ones(single.shape[0])]
        cols += [single.sum(axis=1)] if self.tied else list(single.T)
        if self.product_term:
            cols.append(np.prod(single, axis=1))
        return np.stack(cols, axis=1).astype(np.float64)

    def fit(self, X, y, *legacy) -> "SingleEffectLinearRegressor":
        """Least-squares fit on ``X`` (n, 2 + k) and ``y`` (n,); ``fit(pairs, single, y)`` is :meth:`fit_pairs`."""
        if legacy:
            if len(legacy) != 1:
                raise TypeError(f"fit takes (X, y) or (pairs, single, y), got {2 + len(legacy)} arrays")
            return self.fit_pairs(X, y, legacy[0])
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        _, single = _split_design(X, None)
        self.n_single_ = single.shape[1]
        self.coef_ = np.linalg.lstsq(self._features(single), y, rcond=None)[0]
        return self

    def fit_pairs(self, pairs, single, y) -> "SingleEffectLinearRegressor":
        """Least-squares fit; ``pairs`` is accepted for API symmetry and checked, not used."""
        pairs, single = check_pairs_single(pairs, single)
        y = _check_y(y, pairs.shape[0])
        if hasattr(self, "n_features_in_"):
            del self.n_features_in_
        self.n_single_ = 2
        self.coef_ = np.linalg.lstsq(self._features(single), y, rcond=None)[0]
        return self

    def predict(self, X, single=None) -> np.ndarray:
        """Predicted phenotypes (n,); ``predict(pairs, single)`` is :meth:`predict_pairs`."""
        if single is not None:
            return self.predict_pairs(X, single)
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if X.shape[1] != 2 + self.n_single_:
            raise ValueError(f"X must have {2 + self.n_single_} columns, got {X.shape[1]}")
        return self._features(_split_design(X, None)[1]) @ self.coef_

    def predict_pairs(self, pairs, single) -> np.ndarray:
        """Predicted phenotypes (n,) of the pairs (n, 2) with single effects (n, 2)."""
        check_is_fitted(self, "coef_")
        _, single = check_pairs_single(pairs, single)
        if self.n_single_ != 2:
            raise ValueError(f"this model was fitted on {self.n_single_} single-effect columns; use predict(X)")
        return self._features(single) @ self.coef_

"""Synthetic interactions with reviews, pluggable review encoders, and the PyG container.

Nothing is downloaded: the quick reproduction uses generated users, items and review
*tokens*; review text features come from TF-IDF + TruncatedSVD of those tokens, an
offline stand-in for the paper's DeBERTa embeddings.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch_geometric.data import Data


@runtime_checkable
class TextEncoder(Protocol):
    """Maps a list of review strings to an array of shape ``(n_reviews, dim)``."""

    dim: int

    def fit_transform(self, texts: list[str]) -> np.ndarray: ...

    def transform(self, texts: list[str]) -> np.ndarray:
        """Encode with what ``fit_transform`` learned (inference: what a deployed teacher runs per request)."""
        ...


class TfidfSVDEncoder:
    """TF-IDF followed by TruncatedSVD (scikit-learn): the offline default encoder."""

    def __init__(self, dim: int = 64, seed: int = 0):
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim, self.seed = dim, seed

    def fit_transform(self, texts: list[str]) -> np.ndarray:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        if len(texts) == 0:
            raise ValueError("texts is empty")
        self.vectorizer_ = TfidfVectorizer(token_pattern=r"\S+")
        tfidf = self.vectorizer_.fit_transform(texts)
        self.svd_ = TruncatedSVD(min(self.dim, tfidf.shape[1] - 1), random_state=self.seed)
        return self._pad(self.svd_.fit_transform(tfidf))

    def transform(self, texts: list[str]) -> np.ndarray:
        """TF-IDF and the SVD projection fitted by :meth:`fit_transform`, applied to ``texts``."""
        if not hasattr(self, "svd_"):
            raise RuntimeError("TfidfSVDEncoder.transform needs fit_transform first")
        return self._pad(self.svd_.transform(self.vectorizer_.transform(texts)))

    def _pad(self, z: np.ndarray) -> np.ndarray:
        out = np.zeros((z.shape[0], self.dim), dtype=np.float32)
        out[:, :z.shape[1]] = z
        return out


class DebertaEncoder:
    """Mean-pooled last hidden state of a Hugging Face model (the paper uses DeBERTa-base, 768-d).

    Needs ``transformers`` and the model files already on disk (``local_files_only``): the
    full configuration only; nothing here downloads.
    """

    def __init__(self, model_name: str = "microsoft/deberta-base", batch_size: int = 32, device: str = "cpu"):
        self.model_name, self.batch_size, self.device = model_name, batch_size, device
        self.dim = 768

    @torch.no_grad()
    def fit_transform(self, texts: list[str]) -> np.ndarray:
        from transformers import AutoModel, AutoTokenizer  # optional dependency

        tok = AutoTokenizer.from_pretrained(self.model_name, local_files_only=True)  # offline-ok: local files only
        model = AutoModel.from_pretrained(self.model_name, local_files_only=True).to(self.device).eval()  # offline-ok
        chunks = []
        for s in range(0, len(texts), self.batch_size):
            enc = tok(texts[s:s + self.batch_size], padding=True, truncation=True, return_tensors="pt").to(self.device)
            h = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            chunks.append(((h * mask).sum(1) / mask.sum(1)).cpu().numpy())
        self.dim = chunks[0].shape[1]
        return np.concatenate(chunks)

    def transform(self, texts: list[str]) -> np.ndarray:
        """The same as :meth:`fit_transform`: a pretrained encoder learns nothing from ``texts``."""
        return self.fit_transform(texts)


def _mean_by_index(values: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    """Row means of ``values`` grouped by ``index`` (zeros for groups without rows)."""
    out = np.zeros((n, values.shape[1]), dtype=np.float64)
    np.add.at(out, index, values)
    count = np.bincount(index, minlength=n).astype(float)
    out[count > 0] /= count[count > 0, None]
    return out.astype(np.float32)


def review_text_features(encoder: TextEncoder, reviews: list[str], review_user: np.ndarray, review_item: np.ndarray,
                         num_users: int, num_items: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Users' and items' text features from their reviews at inference: ``encoder.transform`` of every review, then
    the mean per user and per item (the teacher's text view; Sec. 3's review encoder, DeBERTa in the paper)."""
    emb = encoder.transform(reviews)
    return (torch.as_tensor(_mean_by_index(emb, review_user, num_users)),
            torch.as_tensor(_mean_by_index(emb, review_item, num_items)))


def interaction_graph(train: torch.Tensor, test: torch.Tensor, num_users: int, num_items: int,
                      user_text: torch.Tensor | None = None, item_text: torch.Tensor | None = None) -> Data:
    """Pack a recommendation problem into a :class:`torch_geometric.data.Data`.

    Args:
        train, test: ``[2, N]`` long tensors of (user, item) pairs.
        num_users, num_items: sizes of the two sides.
        user_text, item_text: cached review embeddings, ``(num_users, d)`` and ``(num_items, d)``.

    Returns:
        Data with ``edge_index`` (the symmetric user-item bipartite graph, items offset by
        ``num_users``; what GCN/LightGCN layers take), ``train_edge_index``, ``test_edge_index``,
        ``num_users``, ``num_items``, ``num_nodes`` and the text features.
    """
    for name, ei in (("train", train), ("test", test)):
        if ei.dim() != 2 or ei.size(0) != 2:
            raise ValueError(f"{name} must be a [2, N] tensor of (user, item) pairs, got shape {tuple(ei.shape)}")
        if ei.numel() and (ei.min() < 0 or ei[0].max() >= num_users or ei[1].max() >= num_items):
            raise ValueError(f"{name} has a user or item index out of range")
    if train.size(1) == 0:
        raise ValueError("train has no interactions")
    u, i = train[0], train[1] + num_users
    edge_index = torch.stack([torch.cat([u, i]), torch.cat([i, u])])
    d = max(user_text.shape[1], 1) if user_text is not None else 0
    return Data(edge_index=edge_index, train_edge_index=train, test_edge_index=test, num_users=num_users,
                num_items=num_items, num_nodes=num_users + num_items,
                user_text=user_text if user_text is not None else torch.zeros(num_users, 0),
                item_text=item_text if item_text is not None else torch.zeros(num_items, 0), text_dim=d)


def synthetic_reviews(n_users: int = 2000, n_items: int = 1500, n_groups: int = 8, n_factors: int = 16,
                      per_user: int = 30, vocab: int = 500, words_per_review: int = 20, noise_words: int = 5,
                      test_fraction: float = 0.2, encoder: TextEncoder | None = None, seed: int = 0) -> Data:
    """Latent-factor interactions with users in taste groups, and a topic-model review per interaction.

    User u in group g has factor ``c_g + 0.5 eps``; items have factors ``v_i ~ N(0, I)`` and a
    popularity bias. Each user picks ``per_user`` distinct items from softmax(2 u.v/sqrt(f) + b_i)
    (Gumbel top-k). A review has ``words_per_review - noise_words`` words from the item's topic
    distribution softmax(1.5 W v_i) over ``vocab`` words plus ``noise_words`` uniform words.
    ``test_fraction`` of each user's items are held out. Text features are the mean encoder
    output over each user's and each item's *training* reviews; the returned ``Data`` also keeps the fitted
    ``text_encoder``, the training ``reviews`` and their ``review_user`` / ``review_item`` indices, so that the
    teacher can be timed with its text encoding (:func:`review_text_features`).
    """
    if min(n_users, n_items, n_groups, per_user, vocab) < 1 or not 0 < test_fraction < 1:
        raise ValueError("sizes must be positive and 0 < test_fraction < 1")
    if per_user >= n_items:
        raise ValueError(f"per_user ({per_user}) must be below n_items ({n_items})")
    if not 0 <= noise_words <= words_per_review:
        raise ValueError("noise_words must lie in [0, words_per_review]")
    rng = np.random.default_rng([seed, 18])
    centres = rng.normal(size=(n_groups, n_factors))
    groups = rng.integers(n_groups, size=n_users)
    users = centres[groups] + 0.5 * rng.normal(size=(n_users, n_factors))
    items = rng.normal(size=(n_items, n_factors))
    bias = 0.5 * rng.normal(size=n_items)
    logits = 2.0 * users @ items.T / np.sqrt(n_factors) + bias
    gumbel = logits + rng.gumbel(size=logits.shape)
    chosen = np.argpartition(-gumbel, per_user, axis=1)[:, :per_user]  # Gumbel top-k = sampling w/o replacement
    user_idx = np.repeat(np.arange(n_users), per_user)
    item_idx = chosen.reshape(-1)
    # hold out test_fraction of each user's items
    n_test = max(1, int(round(test_fraction * per_user)))
    is_test = np.zeros((n_users, per_user), dtype=bool)
    is_test[:, :n_test] = True
    is_test = rng.permuted(is_test, axis=1).reshape(-1)
    # one review per interaction
    words = rng.normal(size=(vocab, n_factors))
    topic = words @ items.T * 1.5 / np.sqrt(n_factors)
    topic = np.exp(topic - topic.max(0))
    topic /= topic.sum(0)
    n_topic = words_per_review - noise_words
    tokens = np.empty((item_idx.size, words_per_review), dtype=np.int64)
    order = np.argsort(item_idx, kind="stable")
    counts = np.bincount(item_idx, minlength=n_items)
    start = 0
    for it in range(n_items):
        rows = order[start:start + counts[it]]
        start += counts[it]
        if rows.size:
            tokens[rows, :n_topic] = rng.choice(vocab, size=(rows.size, n_topic), p=topic[:, it])
    tokens[:, n_topic:] = rng.integers(vocab, size=(item_idx.size, noise_words))
    reviews = [" ".join(f"w{t}" for t in row) for row in tokens]
    train_mask = ~is_test
    encoder = encoder if encoder is not None else TfidfSVDEncoder(64, seed=seed)
    emb = encoder.fit_transform([r for r, m in zip(reviews, train_mask) if m])
    user_text = _mean_by_index(emb, user_idx[train_mask], n_users)
    item_text = _mean_by_index(emb, item_idx[train_mask], n_items)
    train = torch.as_tensor(np.stack([user_idx[train_mask], item_idx[train_mask]]), dtype=torch.long)
    test = torch.as_tensor(np.stack([user_idx[is_test], item_idx[is_test]]), dtype=torch.long)
    data = interaction_graph(train, test, n_users, n_items, torch.as_tensor(user_text), torch.as_tensor(item_text))
    data.user_group = torch.as_tensor(groups)
    # what the teacher's text view needs at inference (review_text_features): the fitted encoder and the reviews
    data.text_encoder = encoder
    data.reviews = [r for r, m in zip(reviews, train_mask) if m]
    data.review_user, data.review_item = user_idx[train_mask], item_idx[train_mask]
    return data

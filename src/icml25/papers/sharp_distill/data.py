"""Synthetic interactions with reviews, the paper's review files from a user path, pluggable review
encoders, and the PyG container.

Nothing is downloaded: the quick reproduction uses generated users, items and review
*tokens*; review text features come from TF-IDF + TruncatedSVD of those tokens, an
offline stand-in for the paper's DeBERTa embeddings. :func:`load_review_dataset` reads the
paper's Amazon / Yelp review files (or the official code's CSV) that a user already has on disk.
"""

from __future__ import annotations

import ast
import csv
import gzip
import io
import json
import math
from pathlib import Path
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


def review_graph(train: torch.Tensor, test: torch.Tensor, num_users: int, num_items: int, reviews: list[str],
                 encoder: TextEncoder) -> Data:
    """:func:`interaction_graph` with text features from the training reviews (one per training pair, in the order
    of ``train``'s columns): ``encoder`` is fitted on them and each user's / item's feature is the mean of its
    reviews' encodings. The returned ``Data`` keeps what the teacher's text view needs at inference
    (:func:`review_text_features`): ``text_encoder``, ``reviews``, ``review_user`` and ``review_item``."""
    if len(reviews) != train.size(1):
        raise ValueError(f"one review per training pair: got {len(reviews)} reviews for {train.size(1)} pairs")
    emb = encoder.fit_transform(reviews)
    ru, ri = train[0].numpy(), train[1].numpy()
    data = interaction_graph(train, test, num_users, num_items, torch.as_tensor(_mean_by_index(emb, ru, num_users)),
                             torch.as_tensor(_mean_by_index(emb, ri, num_items)))
    data.text_encoder, data.reviews, data.review_user, data.review_item = encoder, reviews, ru, ri
    return data


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
    train = torch.as_tensor(np.stack([user_idx[train_mask], item_idx[train_mask]]), dtype=torch.long)
    test = torch.as_tensor(np.stack([user_idx[is_test], item_idx[is_test]]), dtype=torch.long)
    data = review_graph(train, test, n_users, n_items, [r for r, m in zip(reviews, train_mask) if m],
                        encoder if encoder is not None else TfidfSVDEncoder(64, seed=seed))
    data.user_group = torch.as_tensor(groups)
    return data


# ----------------------------------------------------------------------------- the paper's review files

REVIEW_KINDS = ("amazon", "yelp", "csv")
"""Formats :func:`load_review_dataset` reads: McAuley's Amazon review JSON lines (``reviewerID``, ``asin``,
``overall``, ``reviewText``), Yelp's ``review.json`` (``user_id``, ``business_id``, ``stars``, ``text``) and the
official code's CSV (``user_id``, ``item_id``, ``review``, optional ``rating``)."""

_JSON_FIELDS = {"amazon": ("reviewerID", "asin", "overall", "reviewText"),
                "yelp": ("user_id", "business_id", "stars", "text")}
OFFICIAL_SPLIT = (0.3, 0.333, 42)
"""The official split (SHARP_Distill.py, ``load_and_split_data``): ``train_test_split(df, test_size=0.3,
random_state=42)``, then the held-out 30% split by ``test_size=0.333, random_state=42`` into validation (the
first part, ~20% of all) and test (~10%)."""


def _open_text(path: Path):
    return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8") if path.suffix == ".gz" \
        else open(path, encoding="utf-8")


def _detect_kind(path: Path) -> str:
    if path.name.lower().removesuffix(".gz").endswith(".csv"):
        return "csv"
    with _open_text(path) as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                obj = _parse_json_line(line, path, n)
                for kind, fields in _JSON_FIELDS.items():
                    if fields[0] in obj and fields[1] in obj:
                        return kind
                raise ValueError(f"{str(path)!r}, line {n}: neither an Amazon review (reviewerID, asin) nor a Yelp "
                                 f"review (user_id, business_id); keys {sorted(obj)[:8]}")
    raise ValueError(f"{str(path)!r} holds no review")


def _parse_json_line(line: str, path: Path, n: int) -> dict:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError:
        try:  # McAuley's 2014 "loose JSON": Python dict literals (his page reads them with eval)
            obj = ast.literal_eval(line.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"{str(path)!r}, line {n}: not a JSON object (nor a Python dict literal): "
                             f"{line.strip()[:80]!r}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{str(path)!r}, line {n}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _rating(value, path: Path, n: int, name: str) -> float:
    try:
        r = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{str(path)!r}, line {n}: {name} must be a number, got {value!r}") from None
    if not math.isfinite(r):
        raise ValueError(f"{str(path)!r}, line {n}: {name} must be finite, got {value!r}")
    return r


def read_reviews(path: str | Path, kind: str = "auto") -> tuple[list[str], list[str], np.ndarray, list[str]]:
    """Every review of a file, in file order: ``(user_ids, item_ids, ratings, texts)``.

    ``kind`` is one of :data:`REVIEW_KINDS` or ``"auto"`` (``.csv`` / ``.csv.gz`` -> ``"csv"``, otherwise the
    first line's keys decide). Amazon: one object per line, strict JSON (the 2018 files, most 2014 ones) or a
    Python dict literal (the 2014 "loose JSON", read with :func:`ast.literal_eval`, never ``eval``); ``reviewerID``,
    ``asin`` and ``overall`` required, a missing ``reviewText`` read as ``""``. Yelp: ``user_id``,
    ``business_id`` and ``stars`` required, ``text`` (``""`` when missing). CSV: a header with ``user_id``,
    ``item_id`` and ``review`` (the official code's columns); ``rating`` optional (NaN when absent). A ``.gz``
    file is read through gzip. Blank lines are skipped.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: an unknown ``kind``; a line that is not an object, lacks a required field or has a
            non-numeric rating (the message names the file and the line); a file without reviews.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"review file not found: {str(path)!r}")
    if kind not in (*REVIEW_KINDS, "auto"):
        raise ValueError(f"kind must be one of {(*REVIEW_KINDS, 'auto')}, got {kind!r}")
    kind = _detect_kind(path) if kind == "auto" else kind
    users: list[str] = []
    items: list[str] = []
    ratings: list[float] = []
    texts: list[str] = []
    if kind == "csv":
        with _open_text(path) as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in ("user_id", "item_id", "review") if c not in (reader.fieldnames or [])]
            if missing:
                raise ValueError(f"{str(path)!r}, line 1: the CSV header lacks {missing} (the official code's "
                                 f"columns: user_id,item_id,review[,rating,timestamp]); got {reader.fieldnames}")
            has_rating = "rating" in reader.fieldnames
            for row in reader:
                n = reader.line_num
                if not row["user_id"] or not row["item_id"]:
                    raise ValueError(f"{str(path)!r}, line {n}: empty user_id or item_id")
                users.append(row["user_id"])
                items.append(row["item_id"])
                ratings.append(_rating(row["rating"], path, n, "rating") if has_rating else math.nan)
                texts.append(row["review"] or "")
    else:
        uf, itf, rf, tf = _JSON_FIELDS[kind]
        with _open_text(path) as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                obj = _parse_json_line(line, path, n)
                absent = [f for f in (uf, itf, rf) if f not in obj]
                if absent:
                    raise ValueError(f"{str(path)!r}, line {n}: a {kind} review lacks {absent}")
                users.append(str(obj[uf]))
                items.append(str(obj[itf]))
                ratings.append(_rating(obj[rf], path, n, rf))
                texts.append(str(obj.get(tf) or ""))
    if not users:
        raise ValueError(f"{str(path)!r} holds no review")
    return users, items, np.asarray(ratings, dtype=np.float64), texts


def _k_core(users: np.ndarray, items: np.ndarray, k: int) -> np.ndarray:
    """Mask of the rows left when users and items with fewer than ``k`` rows are removed until none is left."""
    keep = np.ones(users.size, dtype=bool)
    while True:
        cu = np.bincount(users[keep], minlength=users.max() + 1)
        ci = np.bincount(items[keep], minlength=items.max() + 1)
        drop = keep & ((cu[users] < k) | (ci[items] < k))
        if not drop.any():
            return keep
        keep &= ~drop


def load_review_dataset(path: str | Path, kind: str = "auto", encoder: TextEncoder | None = None,
                        k_core: int = 0, min_rating: float | None = None, split_seed: int = OFFICIAL_SPLIT[2],
                        seed: int = 0, max_users: int = 0) -> Data:
    """The paper's review data (Amazon CDs / Beauty / Cellphones / Sports, Yelp) from a file on disk, as the
    ``Data`` that :func:`synthetic_reviews` returns.

    Reads :func:`read_reviews` (``kind``: ``"amazon"``, ``"yelp"``, ``"csv"`` or ``"auto"``). Nothing is downloaded.

    Facts from the official code (S-Forouzandeh/SHARP-Distill at d80da9e, SHARP_Distill.py and README):

    * every review is one implicit interaction ("1 if the user reviewed the item",
      ``create_binary_interaction_matrix``): no rating threshold (``min_rating=None``);
    * no filtering in the code (its input is an already "Filtered_*.csv"): ``k_core=0``;
    * the split (``load_and_split_data``, :data:`OFFICIAL_SPLIT`): a random 70 / 20 / 10 split of the rows
      into train / validation / test by scikit-learn's ``train_test_split`` (``test_size=0.3``, then
      ``0.333`` of the rest, ``random_state=42``); with the same rows in the same order, this is the official
      split (``split_seed=42``);
    * users and items get indices in order of first appearance in the *training* rows (the hypergraphs are
      built from ``train_data`` with ``unique()``), the reviews' texts are grouped per user and per item.

    Our choices (not facts): a repeated (user, item) pair keeps its first review only (in file order,
    before the split), so that a pair is never both a training and a test item; validation and test pairs
    whose user or item has no training row are dropped (no index, no text: counted in ``n_dropped_val`` /
    ``n_dropped_test``); optional ``k_core`` (iterated, users and items with at least ``k_core`` reviews) and
    ``min_rating`` (keep ratings >= it) filters apply before the split, off by default; ``max_users`` > 0 keeps only
    the reviews of that many users, drawn uniformly at random without replacement by
    ``numpy.random.default_rng(split_seed)`` from the file's distinct users in sorted-id order (the same users for
    every run seed; applied first, then the repeated pairs, the filters and the split); text features are the mean
    ``encoder`` output (default :class:`TfidfSVDEncoder` (64, ``seed``), a stand-in for DeBERTa; pass
    :class:`DebertaEncoder` with a local model folder for the paper's) over each user's and item's *training*
    reviews, as for the generated data. The rating is kept (``train_rating`` ...) but not used by the
    models (the paper's labels are binary).

    Returns:
        :func:`interaction_graph`'s ``Data`` (``train_edge_index``, ``test_edge_index`` ...) with
        ``val_edge_index``, ``train_rating`` / ``val_rating`` / ``test_rating``, ``user_ids`` / ``item_ids``
        (the raw ids by index), ``text_encoder``, ``reviews`` / ``review_user`` / ``review_item`` (the training
        reviews, as :func:`synthetic_reviews` keeps them), ``n_dropped_val`` and ``n_dropped_test``.

    Raises:
        FileNotFoundError, ValueError: see :func:`read_reviews`; also when filtering leaves too few reviews
        to split or no test pair.
    """
    from sklearn.model_selection import train_test_split

    if int(k_core) != k_core or k_core < 0:
        raise ValueError(f"k_core must be an integer >= 0, got {k_core!r}")
    if int(max_users) != max_users or max_users < 0:
        raise ValueError(f"max_users must be an integer >= 0 (0: every user), got {max_users!r}")
    users, items, ratings, texts = read_reviews(path, kind)
    uid, u = np.unique(np.asarray(users, dtype=object), return_inverse=True)
    iid, i = np.unique(np.asarray(items, dtype=object), return_inverse=True)
    keep = np.zeros(u.size, dtype=bool)
    _, first = np.unique(u.astype(np.int64) * iid.size + i, return_index=True)  # first review of each pair
    keep[first] = True
    if 0 < max_users < uid.size:
        chosen = np.random.default_rng(split_seed).choice(uid.size, int(max_users), replace=False)
        keep &= np.isin(u, chosen)
    if min_rating is not None:
        keep &= ratings >= min_rating
    if k_core > 1:
        sub = np.flatnonzero(keep)
        keep[:] = False
        keep[sub[_k_core(u[sub], i[sub], k_core)]] = True
    rows = np.flatnonzero(keep)
    test_size, val_test, rs = OFFICIAL_SPLIT
    if rows.size < 4:
        raise ValueError(f"{str(path)!r}: {rows.size} distinct (user, item) reviews left after filtering; the "
                         f"70/20/10 split needs at least 4")
    train_rows, rest = train_test_split(rows, test_size=test_size, random_state=split_seed)
    val_rows, test_rows = train_test_split(rest, test_size=val_test, random_state=split_seed)
    # indices in order of first appearance in the training rows (the official ``unique()`` on train_data)
    u_code, i_code = u[train_rows], i[train_rows]
    u_first = u_code[np.sort(np.unique(u_code, return_index=True)[1])]
    i_first = i_code[np.sort(np.unique(i_code, return_index=True)[1])]
    u_map = np.full(uid.size, -1, dtype=np.int64)
    i_map = np.full(iid.size, -1, dtype=np.int64)
    u_map[u_first] = np.arange(u_first.size)
    i_map[i_first] = np.arange(i_first.size)
    nu, ni = u_first.size, i_first.size

    def pairs(r: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, int]:
        a, b = u_map[u[r]], i_map[i[r]]
        ok = (a >= 0) & (b >= 0)
        return (torch.as_tensor(np.stack([a[ok], b[ok]]), dtype=torch.long),
                torch.as_tensor(ratings[r][ok], dtype=torch.float32), int((~ok).sum()))

    train, train_rating, _ = pairs(train_rows)
    val, val_rating, n_drop_val = pairs(val_rows)
    test, test_rating, n_drop_test = pairs(test_rows)
    if test.size(1) == 0:
        raise ValueError(f"{str(path)!r}: no test pair has a user and an item seen in training")
    train_texts = [texts[r] for r in train_rows]  # every training pair is kept: the maps come from them
    data = review_graph(train, test, nu, ni, train_texts,
                        encoder if encoder is not None else TfidfSVDEncoder(64, seed=seed))
    data.val_edge_index = val
    data.train_rating, data.val_rating, data.test_rating = train_rating, val_rating, test_rating
    data.user_ids, data.item_ids = [str(x) for x in uid[u_first]], [str(x) for x in iid[i_first]]
    data.n_dropped_val, data.n_dropped_test = n_drop_val, n_drop_test
    return data

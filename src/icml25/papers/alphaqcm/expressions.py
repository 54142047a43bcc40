"""Formulaic alphas: the token set, a reverse-Polish builder with validity masks, and
vectorised NumPy operators over a ``(days, stocks)`` panel.

Grammar (AlphaGen's, as used by AlphaQCM): an expression is written token by token in
reverse-Polish order. Features and constants push a series, a window token pushes an
integer, operators pop their operands. To keep every prefix completable we add three
simple typing rules: a window may only follow a non-constant series and must be
followed by a rolling operator; a constant may only follow a non-constant series (so
every binary operator has at least one non-constant operand); unary operators never
apply to a constant. ``SEP`` ends the expression once the stack holds one series.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

FEATURES = ("open", "close", "high", "low", "volume", "vwap")
UNARY = ("Abs", "Log")
BINARY = ("Add", "Sub", "Mul", "Div", "Greater", "Less")
ROLLING = ("Ref", "Mean", "Sum", "Std", "Var", "Max", "Min", "Med", "Mad", "Delta", "WMA", "EMA")
PAIR_ROLLING = ("Cov", "Corr")
PAPER_WINDOWS = (10, 20, 30, 40, 50)
PAPER_CONSTANTS = (-30.0, -10.0, -5.0, -2.0, -1.0, -0.5, -0.01, 0.01, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
SEP = "SEP"


# ----------------------------------------------------------------------------- operators
def _rolling(x: np.ndarray, window: int) -> np.ndarray:
    """View of shape ``(days - window + 1, stocks, window)`` of trailing windows along axis 0."""
    return sliding_window_view(x, window, axis=0)


def _pad(values: np.ndarray, window: int, days: int) -> np.ndarray:
    """Prepend ``window - 1`` NaN rows so a rolling result aligns with its input days."""
    out = np.full((days,) + values.shape[1:], np.nan)
    out[window - 1:] = values
    return out


def _weighted(w: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Weighted mean over each window's last axis, weights ``k`` normalised to sum 1."""
    return w @ (k / k.sum())


def _ddof1(stat):
    """``Std``/``Var`` with ``ddof=1`` (NaN for a one-day window)."""
    return lambda w, window: stat(w, -1, ddof=1) if window > 1 else np.full(w.shape[:-1], np.nan)


_WINDOW_STATS = {
    "Mean": lambda w, window: w.mean(-1),
    "Sum": lambda w, window: w.sum(-1),
    "Std": _ddof1(np.std),
    "Var": _ddof1(np.var),
    "Max": lambda w, window: w.max(-1),
    "Min": lambda w, window: w.min(-1),
    "Med": lambda w, window: np.median(w, -1),
    "Mad": lambda w, window: np.abs(w - w.mean(-1, keepdims=True)).mean(-1),
    "WMA": lambda w, window: _weighted(w, np.arange(1, window + 1, dtype=float)),  # newest largest
    "EMA": lambda w, window: _weighted(w, (1 - 2.0 / (window + 1)) ** np.arange(window - 1, -1, -1, dtype=float)),
}
"""The window reducers of :func:`rolling_stat`: ``(windows (days', stocks, w), w) -> (days', stocks)``."""


def rolling_stat(x: np.ndarray, window: int, op: str) -> np.ndarray:
    """Trailing-window statistic of each column of ``x`` (NaN for the first ``window-1`` rows
    and for any window that contains a NaN, like ``pandas.rolling(window)``).

    ``op`` is one of ``ROLLING``; ``Std``/``Var`` use ``ddof=1``; ``Mad`` is the mean
    absolute deviation from the window mean; ``WMA`` uses linear weights ``1..w`` (newest
    largest); ``EMA`` uses weights ``(1-a)^k`` with ``a = 2/(w+1)``, normalised over the window.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"operators take a (days, stocks) panel, got shape {x.shape}")
    if not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    if op not in ROLLING:
        raise ValueError(f"unknown rolling operator {op!r}; valid: {ROLLING}")
    days = x.shape[0]
    if op == "Ref":
        out = np.full_like(x, np.nan)
        out[window:] = x[:-window] if window < days else out[window:]
        return out
    if op == "Delta":
        return x - rolling_stat(x, window, "Ref")
    if window > days:
        return np.full_like(x, np.nan)
    w = _rolling(x, window)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = _WINDOW_STATS[op](w, window)
    return _pad(v, window, days)


def rolling_pair(x: np.ndarray, y: np.ndarray, window: int, op: str) -> np.ndarray:
    """Trailing-window ``Cov`` (ddof=1) or Pearson ``Corr`` of two panels, column by column."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"panels must have the same shape, got {x.shape} and {y.shape}")
    if op not in PAIR_ROLLING:
        raise ValueError(f"unknown pair operator {op!r}; valid: {PAIR_ROLLING}")
    if not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    if window < 2 or window > x.shape[0]:
        return np.full_like(x, np.nan)
    wx, wy = _rolling(x, window), _rolling(y, window)
    dx, dy = wx - wx.mean(-1, keepdims=True), wy - wy.mean(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = (dx * dy).sum(-1)
        if op == "Cov":
            v = cov / (window - 1)
        else:
            v = cov / np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
            v[~np.isfinite(v)] = np.nan
    return _pad(v, window, x.shape[0])


def apply_unary(op: str, x: np.ndarray) -> np.ndarray:
    """``Abs`` or ``Log`` (NaN where ``x <= 0``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if op == "Abs":
            return np.abs(x)
        if op == "Log":
            return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), np.nan)
    raise ValueError(f"unknown unary operator {op!r}")


def apply_binary(op: str, a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """``Add, Sub, Mul, Div`` (NaN on division by 0), ``Greater``/``Less`` = elementwise max/min."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if op == "Add":
            return a + b
        if op == "Sub":
            return a - b
        if op == "Mul":
            return a * b
        if op == "Div":
            out = np.divide(a, b)
            return np.where(np.isfinite(out), out, np.nan)
        if op == "Greater":
            return np.fmax(a, b) if np.ndim(a) or np.ndim(b) else max(a, b)
        if op == "Less":
            return np.fmin(a, b) if np.ndim(a) or np.ndim(b) else min(a, b)
    raise ValueError(f"unknown binary operator {op!r}")


# ----------------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class Token:
    """One token: ``kind`` in {feature, const, window, unary, binary, rolling, pair, sep}."""

    kind: str
    name: str
    value: float = 0.0


@dataclass
class TokenSet:
    """An ordered vocabulary of tokens; an action is an index into ``tokens``."""

    operators: tuple[str, ...] = UNARY + BINARY + ROLLING + PAIR_ROLLING
    features: tuple[str, ...] = FEATURES
    windows: tuple[int, ...] = PAPER_WINDOWS
    constants: tuple[float, ...] = PAPER_CONSTANTS
    tokens: list[Token] = field(init=False)

    def __post_init__(self) -> None:
        known = set(UNARY + BINARY + ROLLING + PAIR_ROLLING)
        for op in self.operators:
            if op not in known:
                raise ValueError(f"unknown operator {op!r}; valid: {sorted(known)}")
        for f in self.features:
            if f not in FEATURES:
                raise ValueError(f"unknown feature {f!r}; valid: {FEATURES}")
        for w in self.windows:
            if int(w) != w or w < 2:
                raise ValueError(f"windows must be ints >= 2, got {w!r}")
        for c in self.constants:
            if not np.isfinite(c):
                raise ValueError(f"constants must be finite numbers, got {c!r}")
        kinds = {**{o: "unary" for o in UNARY}, **{o: "binary" for o in BINARY},
                 **{o: "rolling" for o in ROLLING}, **{o: "pair" for o in PAIR_ROLLING}}
        self.tokens = ([Token(kinds[o], o) for o in self.operators] + [Token("feature", f) for f in self.features]
                       + [Token("window", str(int(w)), float(w)) for w in self.windows]
                       + [Token("const", repr(float(c)), float(c)) for c in self.constants] + [Token("sep", SEP)])
        self.kind = np.array([t.kind for t in self.tokens])

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def sep_id(self) -> int:
        """Action index of ``SEP``."""
        return len(self.tokens) - 1

    def index(self, name: str) -> int:
        """Action index of the token printed as ``name`` (e.g. ``"close"``, ``"20"``, ``"-1.0"``)."""
        for i, t in enumerate(self.tokens):
            if t.name == name:
                return i
        raise ValueError(f"token {name!r} is not in this token set")


def reduced_token_set() -> TokenSet:
    """The ~30-token vocabulary of the quick reproduction (16 operators, 6 features, 3 windows, 4 constants, SEP)."""
    return TokenSet(operators=("Abs", "Log", "Add", "Sub", "Mul", "Div", "Ref", "Mean", "Sum", "Std", "Max", "Min",
                               "Delta", "EMA", "Cov", "Corr"),
                    windows=(5, 10, 20), constants=(-1.0, 0.5, 1.0, 5.0))


class RPNBuilder:
    """Incremental reverse-Polish builder with validity masks.

    The stack holds ``"x"`` (non-constant series), ``"c"`` (constant) or ``"w"`` (window).
    ``valid_mask()`` allows exactly the tokens after which the expression can still be
    finished (with ``SEP``) within ``max_len`` tokens.
    """

    def __init__(self, tokens: TokenSet, max_len: int = 20):
        if max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        self.tokens, self.max_len = tokens, int(max_len)
        self.seq: list[int] = []
        self.stack: list[str] = []
        self._has_pair = bool(np.any(tokens.kind == "pair"))
        self._has_rolling = bool(np.any(tokens.kind == "rolling"))

    def reset(self) -> None:
        """Start a new, empty expression."""
        self.seq, self.stack = [], []

    @staticmethod
    def _apply(stack: list[str], tok: Token) -> list[str] | None:
        """The stack after ``tok``, or ``None`` if ``tok`` is not allowed on ``stack``."""
        top = stack[-1] if stack else None
        k = tok.kind
        if top == "w" and k not in ("rolling", "pair"):
            return None
        if k == "feature":
            return stack + ["x"]
        if k == "const":
            return stack + ["c"] if top == "x" else None
        if k == "window":
            return stack + ["w"] if top == "x" else None
        if k == "unary":
            return stack if top == "x" else None
        if k == "binary":
            return stack[:-2] + ["x"] if len(stack) >= 2 else None  # no two adjacent constants exist
        if k == "rolling":
            return stack[:-2] + ["x"] if top == "w" and stack[-2] == "x" else None
        if k == "pair":
            return stack[:-3] + ["x"] if top == "w" and len(stack) >= 3 and stack[-3:-1] == ["x", "x"] else None
        if k == "sep":
            return ["done"] if stack == ["x"] else None
        raise ValueError(f"unknown token kind {k!r}")

    def tokens_to_finish(self, stack: list[str]) -> int:
        """Fewest further non-SEP tokens that reduce ``stack`` to one series (0 when it is one)."""
        if stack == ["done"]:
            return 0
        if not stack:
            return 1
        if stack[-1] == "w":
            rest = stack[:-1]
            pair = self._has_pair and len(rest) >= 2 and rest[-2:] == ["x", "x"]
            n = len(rest) - 1 if pair else len(rest)
            return 1 + n - 1
        return len(stack) - 1

    def valid_mask(self) -> np.ndarray:
        """Boolean mask over the token set: which tokens may come next."""
        mask = np.zeros(len(self.tokens), dtype=bool)
        room = self.max_len - len(self.seq)
        for i, tok in enumerate(self.tokens.tokens):
            new = self._apply(self.stack, tok)
            if new is None or (tok.kind == "window" and not self._has_rolling and not self._has_pair):
                continue
            if tok.kind == "sep":
                mask[i] = True
            elif room >= 1 and self.tokens_to_finish(new) <= room - 1:
                mask[i] = True
        return mask

    def add(self, action: int) -> None:
        """Append token ``action``; raises ``ValueError`` if it is not allowed here."""
        if not 0 <= action < len(self.tokens):
            raise ValueError(f"action must be in [0, {len(self.tokens)}), got {action}")
        if not self.valid_mask()[action]:
            raise ValueError(f"token {self.tokens.tokens[action].name!r} is invalid after {self.to_string()!r}")
        self.stack = self._apply(self.stack, self.tokens.tokens[action])
        if self.tokens.tokens[action].kind != "sep":
            self.seq.append(int(action))

    @property
    def is_complete(self) -> bool:
        """The stack holds exactly one non-constant series (``SEP`` would be accepted)."""
        return self.stack in (["x"], ["done"])

    def to_string(self) -> str:
        """The tokens so far, space separated, in reverse-Polish order."""
        return " ".join(self.tokens.tokens[i].name for i in self.seq)


def parse_rpn(text: str, tokens: TokenSet, max_len: int = 10**6) -> list[int]:
    """Action indices of a space-separated RPN string; ``ValueError`` if it is not a valid complete expression."""
    b = RPNBuilder(tokens, max_len)
    for name in text.split():
        b.add(tokens.index(name))
    if not b.is_complete:
        raise ValueError(f"incomplete expression {text!r} (stack {b.stack})")
    return list(b.seq)


def evaluate_rpn(seq: list[int], tokens: TokenSet, panel: dict[str, np.ndarray]) -> np.ndarray:
    """Value ``(days, stocks)`` of an RPN token sequence on a panel of features.

    ``panel`` maps each feature name to a ``(days, stocks)`` array.
    """
    ids = np.asarray(seq)
    if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise TypeError(f"seq must be a 1-d sequence of integer action ids, got {seq!r}")
    if ids.size and (ids.min() < 0 or ids.max() >= len(tokens)):
        raise ValueError(f"action ids must lie in [0, {len(tokens)}), got {ids.min()}..{ids.max()}")
    stack: list = []
    for a in ids.tolist():
        tok = tokens.tokens[a]
        k = tok.kind
        if k == "feature":
            if tok.name not in panel:
                raise ValueError(f"panel has no feature {tok.name!r}")
            stack.append(np.asarray(panel[tok.name], dtype=float))
        elif k in ("const", "window"):
            stack.append(tok.value)
        elif k == "unary":
            stack.append(apply_unary(tok.name, stack.pop()))
        elif k == "binary":
            b, a_ = stack.pop(), stack.pop()
            stack.append(apply_binary(tok.name, a_, b))
        elif k == "rolling":
            w, x = stack.pop(), stack.pop()
            stack.append(rolling_stat(x, int(w), tok.name))
        elif k == "pair":
            w, y, x = stack.pop(), stack.pop(), stack.pop()
            stack.append(rolling_pair(x, y, int(w), tok.name))
        elif k == "sep":
            break
    if len(stack) != 1 or np.ndim(stack[0]) != 2:
        raise ValueError("token sequence is not one complete series expression")
    return stack[0]

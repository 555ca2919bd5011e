"""Reference solution for week 7, "Attention: selective retrieval".

Trusted code: the grader imports it to compute expected values. Nothing under
solutions/ is ever shipped to students or loaded inside a sandboxed worker.

Shapes follow the lecture: rows are queries, columns are keys (slide 13);
``...`` are leading batch/head axes that broadcast.
"""
import math

import numpy as np
import torch


def score(Q, K, scale=None):
    """Scaled dot-product scores S = Q Kᵀ · scale (slides 8 and 10).

    Q: (..., Nq, dk), K: (..., Nk, dk) -> S: (..., Nq, Nk).
    ``scale=None`` means 1/√dk; ``scale=1.0`` gives the plain dot score.
    """
    Q, K = np.asarray(Q), np.asarray(K)
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[-1])
    return (Q @ np.swapaxes(K, -1, -2)) * scale


def additive_score(Q, K, W_q, W_k, v, b):
    """Additive (Bahdanau) scores e_ij = vᵀ tanh(W_q q_i + W_k k_j + b) (slide 9).

    Q: (Nq, dq), K: (Nk, dk), W_q: (h, dq), W_k: (h, dk), v: (h,), b: (h,)
    -> e: (Nq, Nk).
    """
    hidden = (Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :] + b
    return np.tanh(hidden) @ v


def causal_mask(n_q, n_k=None):
    """Boolean (n_q, n_k) mask, True where query i may see key j, i.e. j ≤ i (slide 20)."""
    if n_k is None:
        n_k = n_q
    return np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]


def padding_mask(lengths, n_k):
    """Boolean (B, 1, n_k) mask, True where key j < lengths[b] exists (slide 21).

    lengths: (B,) integers.
    """
    lengths = np.asarray(lengths)
    return (np.arange(n_k)[None, :] < lengths[:, None])[:, None, :]


def apply_mask(S, allowed):
    """A copy of S with −inf wherever ``allowed`` (broadcast to S) is False (slide 20).

    S: (..., Nq, Nk) scores; allowed: boolean, broadcastable to S.
    """
    S = np.asarray(S)
    return np.where(np.broadcast_to(allowed, S.shape), S, -np.inf)


def softmax(S):
    """Row-wise softmax over the last axis (keys), stable for large scores (slides 11, 22).

    S: (..., Nq, Nk) -> A: (..., Nq, Nk), every row summing to 1 and −inf
    entries getting weight exactly 0. Raises ValueError when a row has no
    finite entry, because an all-masked row has no valid normalization.
    """
    S = np.asarray(S)
    if not np.isfinite(S).any(axis=-1).all():
        raise ValueError("softmax: a row has no finite score (every key is masked)")
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def context(A, V):
    """Context vectors C = A V (slide 12).

    A: (..., Nq, Nk), V: (..., Nk, dv) -> C: (..., Nq, dv).
    """
    return np.asarray(A) @ np.asarray(V)


def attention(Q, K, V, allowed=None, scale=None):
    """Compare, normalize, retrieve (slide 30): returns (C, A).

    Q: (..., Nq, dk), K: (..., Nk, dk), V: (..., Nk, dv), allowed: boolean
    broadcastable to (..., Nq, Nk) or None -> C: (..., Nq, dv), A: (..., Nq, Nk).
    """
    S = score(Q, K, scale)
    if allowed is not None:
        S = apply_mask(S, allowed)
    A = softmax(S)
    return context(A, V), A


def attention_torch(Q, K, V, allowed=None, scale=None):
    """The same as ``attention`` on torch tensors, differentiable (slide 27).

    ``allowed`` is a boolean tensor, True where a key may be attended, as in
    ``torch.nn.functional.scaled_dot_product_attention``. Returns (C, A).
    """
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[-1])
    S = (Q @ K.transpose(-2, -1)) * scale
    if allowed is not None:
        S = S.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(S, dim=-1)
    return A @ V, A

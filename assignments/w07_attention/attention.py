"""Week 7 · Attention: selective retrieval.

Implement every function below; each one follows a step of the lecture:
compare (scores), normalize (softmax with masks), retrieve (context), then
the same in PyTorch. Shapes: rows are queries, columns are keys (slide 13),
and ``...`` are leading batch/head axes that broadcast.

Import only NumPy, PyTorch and Python's standard library: other packages
(SciPy, seaborn, ...) may be missing where your work is graded, and a file
whose imports fail cannot be graded at all. Graded code runs in a sandbox
with no network and no multiprocessing, and writes files only in its own
folder: do the work in the function itself, and one-time setup (a table, a
cache) at the top level of the file, not in a function's first call, which
is timed.

Check your work with the public checks:

    autograder check attention.py

A worked example to verify by hand first (slides 14-17):
q = [1, 0], K = [[1, 0], [0, 1], [1, 1]], V = [[10, 0], [0, 10], [10, 10]]
gives scores ≈ [0.7071, 0, 0.7071], weights ≈ [0.4011, 0.1978, 0.4011] and
context ≈ [8.0222, 5.9889]. With the changed query q = [0, 1] the context is
≈ [5.9889, 8.0222]. (Slide 17 prints [8.022, 5.989], which is the first
query's result; the value computed here is the right one for q = [0, 1].)
"""


def score(Q, K, scale=None):
    """Scaled dot-product scores S = Q Kᵀ · scale (slides 8, 10 and 13).

    Args:
        Q: queries, shape (..., Nq, dk).
        K: keys, shape (..., Nk, dk).
        scale: multiplier for the dot products; None means 1/√dk,
            1.0 gives the plain dot score.

    Returns:
        S: scores, shape (..., Nq, Nk); row i compares query i with every key.
    """
    raise NotImplementedError("score")


def additive_score(Q, K, W_q, W_k, v, b):
    """Additive scores e_ij = vᵀ tanh(W_q q_i + W_k k_j + b) (slide 9).

    Args:
        Q: queries, shape (Nq, dq).
        K: keys, shape (Nk, dk).
        W_q: query projection, shape (h, dq).
        W_k: key projection, shape (h, dk).
        v: output weights, shape (h,).
        b: bias, shape (h,).

    Returns:
        e: scores, shape (Nq, Nk).
    """
    raise NotImplementedError("additive_score")


def causal_mask(n_q, n_k=None):
    """Causal mask: True where query i may see key j, i.e. j ≤ i (slide 20).

    Args:
        n_q: number of queries.
        n_k: number of keys; None means n_q.

    Returns:
        allowed: boolean array, shape (n_q, n_k).
    """
    raise NotImplementedError("causal_mask")


def padding_mask(lengths, n_k):
    """Padding mask: True where key j exists, i.e. j < lengths[b] (slide 21).

    Args:
        lengths: true sequence lengths, shape (B,).
        n_k: padded number of keys.

    Returns:
        allowed: boolean array, shape (B, 1, n_k); the middle axis broadcasts
        over queries.
    """
    raise NotImplementedError("padding_mask")


def apply_mask(S, allowed):
    """Hide keys before the softmax: −inf wherever ``allowed`` is False (slide 20).

    Args:
        S: scores, shape (..., Nq, Nk). Must not be modified.
        allowed: boolean mask broadcastable to S; True = may attend.

    Returns:
        A new array shaped like S, equal to S where allowed and −inf elsewhere.
    """
    raise NotImplementedError("apply_mask")


def softmax(S):
    """Softmax over the last axis (keys), separately for each query (slide 11).

    Must be numerically stable for scores in the thousands, give masked (−inf)
    entries weight exactly 0, and make every row sum to 1.

    Args:
        S: scores, shape (..., Nq, Nk), possibly containing −inf.

    Returns:
        A: weights, shape (..., Nq, Nk).

    Raises:
        ValueError: if any row has no finite entry, because an all-masked row
            has no valid normalization (slide 22).
    """
    raise NotImplementedError("softmax")


def context(A, V):
    """Retrieval as a weighted sum: C = A V (slide 12).

    Args:
        A: attention weights, shape (..., Nq, Nk).
        V: values, shape (..., Nk, dv).

    Returns:
        C: context vectors, shape (..., Nq, dv).
    """
    raise NotImplementedError("context")


def attention(Q, K, V, allowed=None, scale=None):
    """Compare, normalize, retrieve (slide 30): score → apply_mask → softmax → context.

    Args:
        Q: queries, shape (..., Nq, dk).
        K: keys, shape (..., Nk, dk).
        V: values, shape (..., Nk, dv).
        allowed: boolean mask broadcastable to (..., Nq, Nk), or None for no mask.
        scale: as in ``score``.

    Returns:
        (C, A): context of shape (..., Nq, dv) and weights of shape (..., Nq, Nk).
    """
    raise NotImplementedError("attention")


def attention_torch(Q, K, V, allowed=None, scale=None):
    """The same as ``attention`` in PyTorch, differentiable (slide 27).

    Args:
        Q, K, V: tensors shaped as in ``attention``.
        allowed: boolean tensor, True where a key may be attended (as in
            ``torch.nn.functional.scaled_dot_product_attention``), or None.
        scale: as in ``score``.

    Returns:
        (C, A) as tensors, connected to autograd so gradients reach Q, K and V.
        A query with every key hidden is not graded here: raise ValueError
        as ``attention`` does (slide 22), or return what PyTorch gives.
    """
    raise NotImplementedError("attention_torch")

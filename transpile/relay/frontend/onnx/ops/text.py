"""Converter of ONNX TfIdfVectorizer over integer token ids (string tokens have no Relay tensor type).

The pool's n-grams are constants, so counting is static: for every n-gram size n and skip
distance d, the windows (x[s], x[s + d], ..., x[s + (n - 1) d]) are one `take` with a constant
index matrix, compared with all pool n-grams of size n at once and summed over s. Unigrams are
counted once (skips do not change them). A constant 0/1 matrix sends each n-gram's count to its
output index, and the mode weighs the counts.
"""

from __future__ import annotations

import numpy as np

from ..converters import converter

_MODES = ("TF", "IDF", "TFIDF")


def pool_ngrams(pool, counts, min_length: int, max_length: int) -> list[tuple[int, np.ndarray, list[int]]]:
    """[(n, grams (K, n), n-gram ids)] of the pool's sizes within [min_length, max_length].

    `counts[i]` is where the n-grams of size i + 1 start in the flat pool; ids number every pool
    n-gram from 0 in pool order, used or not (they index ngram_indexes).
    """
    groups, next_id = [], 0
    for i, start in enumerate(counts):
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        n = i + 1
        number = (end - start) // n
        if number > 0 and min_length <= n <= max_length:
            grams = np.asarray(pool[start : start + number * n], dtype="int64").reshape(number, n)
            groups.append((n, grams, list(range(next_id, next_id + number))))
        next_id += max(number, 0)
    return groups


@converter("TfIdfVectorizer")
def tf_idf_vectorizer(ctx):
    b = ctx.b
    x = ctx.input(0)
    if ctx.attr("pool_strings"):
        raise ctx.unsupported("a pool of strings: Relay has no string tensors")
    dtype = b.dtype_of(x)
    if np.dtype(dtype).kind not in "iu":
        raise b.error(f"the input must hold integer token ids, got {b.type_of(x)}")
    mode = ctx.attr("mode")
    if mode not in _MODES:
        raise b.error(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    min_length, max_length = int(ctx.attr("min_gram_length", 1)), int(ctx.attr("max_gram_length", 1))
    max_skip = int(ctx.attr("max_skip_count", 0))
    pool, counts, indexes = (
        ctx.attr("pool_int64s") or [],
        ctx.attr("ngram_counts") or [],
        ctx.attr("ngram_indexes") or [],
    )
    if not indexes:
        raise b.error("attribute ngram_indexes is required")
    rank = b.ndim_of(x)
    if rank not in (1, 2):
        raise b.error(f"the input must be [C] or [N, C], got {b.type_of(x)}")
    rows = x if rank == 2 else b.call("expand_dims", x, axis=0)
    length = b.static_shape(rows, "the input")[1]
    size = max(indexes) + 1

    found = []  # (counts (N, K) float32, n-gram ids)
    for n, grams, ids in pool_ngrams(pool, counts, min_length, max_length):
        total = None
        for distance in range(1, (max_skip if n > 1 else 0) + 2):
            starts = length - (n - 1) * distance
            if starts <= 0:
                break
            windows = np.arange(starts).reshape(-1, 1) + distance * np.arange(n).reshape(1, -1)
            taken = b.call("take", rows, b.const(windows.astype("int64")), axis=1)  # (N, S, n)
            same = b.call(
                "equal", b.call("expand_dims", taken, axis=2), b.const(grams.astype(dtype).reshape(1, 1, -1, n))
            )
            matches = b.call("sum", b.call("cast", b.call("all", same, axis=[3]), dtype="float32"), axis=[1])
            total = matches if total is None else b.call("add", total, matches)
        if total is not None:
            found.append((total, ids))
    if not found:
        frequencies = b.const(np.zeros((b.static_shape(rows, "the input")[0], size), dtype="float32"))
    else:
        ids = [i for _, group in found for i in group]
        if max(ids) >= len(indexes):
            raise b.error(f"ngram_indexes has {len(indexes)} entries for {max(ids) + 1} pool n-grams")
        routing = np.zeros((size, len(ids)), dtype="float32")  # dense weight: (units, K)
        routing[[indexes[i] for i in ids], np.arange(len(ids))] = 1.0
        per_gram = found[0][0] if len(found) == 1 else b.call("concatenate", b.tuple([c for c, _ in found]), axis=1)
        frequencies = b.call("nn.dense", per_gram, b.const(routing), units=size)
    weights = ctx.attr("weights")
    if mode == "IDF":
        present = b.call("greater", frequencies, b.const(np.array(0, dtype="float32")))
        scale = b.const(np.asarray(weights, dtype="float32")) if weights else b.const(np.array(1, dtype="float32"))
        frequencies = b.call("where", present, scale, b.const(np.array(0, dtype="float32")))
    elif mode == "TFIDF" and weights:
        frequencies = b.call("multiply", frequencies, b.const(np.asarray(weights, dtype="float32")))
    return frequencies if rank == 2 else b.call("squeeze", frequencies, axis=[0])

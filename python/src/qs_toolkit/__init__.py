"""qs_toolkit: score tree-ensemble models with libqs, the QuickScorer toolkit.

The scores are the training library's, bit for bit, and the same bytes as
``qs-score`` gives for the same documents::

    import numpy as np
    import qs_toolkit as qs

    model = qs.Model("model.txt")          # LightGBM, XGBoost, CatBoost, ONNX, QuickRank, .qsm
    scores = model.predict(X)              # X: 2-D float64/float32 array or SciPy CSR matrix
    qs.eval.ndcg(labels, scores, qids, k=10)

A ``Model`` is safe to share between threads: ``predict`` releases the GIL
while it scores, so Python threads score side by side, and ``threads=`` sets
the library's own threads for one call.
"""
import os
from typing import Any, Dict, List, Optional, Union

import numpy as np

from . import _core
from ._core import (DeviceError, Error, FormatError, LimitError, UnsupportedError,
                    LIBQS_VERSION)
from . import eval  # noqa: F401  (qs_toolkit.eval.ndcg)
from .scale import dask_predict, spark_predict

__all__ = ["Model", "dask_predict", "spark_predict", "backends", "build_info", "eval", "format_score", "Error", "FormatError",
           "UnsupportedError", "LimitError", "DeviceError", "__version__"]

__version__ = LIBQS_VERSION


def _is_sparse(X: Any) -> bool:
    # scipy is imported only when the caller gives a scipy object
    return type(X).__module__.startswith("scipy.sparse")


def _csr_parts(X: Any):
    fmt = getattr(X, "format", None)
    if fmt != "csr":
        raise TypeError("sparse X must be a CSR matrix (X.tocsr()), not %s" % (fmt,))
    if X.ndim != 2:
        raise ValueError("X must be 2-D")
    try:
        # the structure first: SciPy's own routines below trust it
        X.check_format(True)
    except (ValueError, TypeError) as e:
        raise ValueError("malformed CSR matrix: %s" % e) from None
    if not X.has_canonical_format:
        # duplicates summed, as SciPy means them; the caller's matrix is left alone
        X = X.copy()
        X.sum_duplicates()
    return (X.shape, np.ascontiguousarray(X.indptr), np.ascontiguousarray(X.indices),
            np.ascontiguousarray(X.data))


class Model(_core.Model):
    """A tree-ensemble model loaded into libqs.

    ``source`` is a path (``str`` or ``os.PathLike``) or the model's bytes:
    a ``.qsm`` (``qs-compile``'s output) or any model ``qs-convert`` reads
    (LightGBM text, XGBoost JSON/UBJSON, CatBoost JSON or ``.cbm``, ONNX,
    QuickRank or RankLib XML, qs canonical text; zstd-compressed too),
    converted and compiled in memory.  ``format`` forces the reader by the
    name ``qs-convert --from`` gives it (``"lightgbm"``, ``"xgboost"``,
    ``"catboost"``, ``"catboost-cbm"``, ...: the library's table of readers);
    by default it is detected.

    Raises ``FormatError`` for a malformed model, ``UnsupportedError`` for a
    model that cannot be scored exactly (qs refuses rather than
    approximates), ``OSError`` when the file cannot be read.

    A path is read as ``qs-score`` reads a model: at most ``QS_MAX_INPUT``
    bytes (1 GiB by default; ``LimitError`` beyond), and no further than the
    first bytes when they show that no model starts so (``/dev/zero``: a
    ``FormatError`` after 64 KiB) or, for a ``.qsm``, than the size its
    header records.  A zstd-compressed model is decompressed to at most
    ``QS_MAX_INPUT`` bytes too.
    """

    def __init__(self, source: Union[str, bytes, bytearray, memoryview, "os.PathLike[str]"],
                 *, format: Optional[str] = None) -> None:
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = source
        elif isinstance(source, (str, os.PathLike)):
            # read as the tools read a model: QS_MAX_INPUT bounds it, and
            # the read stops where the first bytes show it is no model
            data = _core._read_model(source, format is None)
        else:
            raise TypeError("source must be a path or bytes, not %s" % type(source).__name__)
        super().__init__(data, format)

    def predict(self, X: Any, *, threads: Optional[int] = None, backend: str = "auto",
                transform: Union[bool, str] = False, trees: Optional[int] = None,
                absent: str = "default") -> np.ndarray:
        """Score the rows of X.

        X: a 2-D NumPy array of float64 or float32 values, any order and
        strides (read in place where the layout allows: float64, unit column
        stride, for a model that reads doubles; else converted a chunk of rows
        at a time), column j = feature j (``num_features`` columns; more are
        refused for LightGBM and XGBoost models, as their own predict does,
        and ignored for the others); NaN is a missing value.  For a LightGBM
        model a value with |x| <= 1e-35 counts as 0.0, as LightGBM's dense
        input reads it.  A float64 value given to a model that reads float32
        (XGBoost, QuickRank, CatBoost borders) is rounded to float32 first, as
        those libraries do.

        A pandas DataFrame is taken as ``X.to_numpy()``: its columns in order.

        Or a SciPy CSR matrix: an absent entry means what the model's library
        means (LightGBM, QuickRank, RankLib, CatBoost, ONNX: 0.0; XGBoost:
        missing) unless ``absent="zero"`` or ``"missing"``; stored values are
        kept as given (LightGBM's CSR input keeps the zero band), which gives
        ``qs-score``'s scores for the same LETOR file.  Columns beyond the
        model's features are ignored.

        threads: the library's threads (default: the CPUs this process may
        run on); every count gives the same scores.  backend: a name of
        ``qs_toolkit.backends()`` (``"auto"``: the fastest exact one).
        transform: True applies the model's output function (sigmoid,
        softmax, ...) with the training library's arithmetic, a name
        (``"none"``, ``"sigmoid"``, ``"exp"``, ...) another exact one, as
        ``qs-score --transform [NAME]``.  trees: score the first N iterations
        only (LightGBM's ``num_iteration``, XGBoost's ``iteration_range``).

        Returns float64 scores: shape (n,) for one output column, (n, classes)
        for several.  Raises TypeError (dtype), ValueError (shape, arguments,
        closed model), UnsupportedError (a back end this machine cannot run,
        a transform that would not be exact).
        """
        if _is_sparse(X):
            shape, indptr, indices, data = _csr_parts(X)
            return self._predict_csr(shape, indptr, indices, data, threads=threads,
                                     backend=backend, transform=transform, trees=trees,
                                     absent=absent)
        if absent != "default":
            raise ValueError("absent= is for sparse input; a dense X holds every value "
                             "(NaN: missing)")
        if type(X).__module__.startswith("pandas"):
            X = X.to_numpy()      # a data frame's columns in order (no copy where it can)
        return self._predict_dense(X, threads=threads, backend=backend, transform=transform,
                                   trees=trees)

    def predict_leaves(self, X: Any, *, backend: str = "auto", trees: Optional[int] = None,
                       absent: str = "default") -> np.ndarray:
        """Each tree's exit leaf for every row of X (as ``predict`` reads X):
        an int32 array (n, trees), numbered as the library's own ``pred_leaf``
        (LightGBM's leaf index, XGBoost's node id; other sources: the leaf's
        rank among its tree's leaves), what ``qs-score --leaves`` prints.
        trees=N: the first N iterations' trees only."""
        if _is_sparse(X):
            shape, indptr, indices, data = _csr_parts(X)
            return self._leaves_csr(shape, indptr, indices, data, backend=backend, trees=trees,
                                    absent=absent)
        if absent != "default":
            raise ValueError("absent= is for sparse input")
        return self._leaves_dense(X, backend=backend, trees=trees)

    @property
    def info(self) -> Dict[str, Any]:
        """The facts ``qs-compile --info --json`` gives for this model (the
        same keys but ``file`` and ``categories``, plus ``kind``)."""
        return self._info()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<qs_toolkit.Model (closed)>"
        return "<qs_toolkit.Model %s, %d trees, %d features, %d classes>" % (
            self.source, self.num_trees, self.num_features, self.num_classes)

    def __reduce__(self):
        # pickled as its .qsm image (Dask and Spark ship models so)
        return (_from_qsm, (self.to_qsm(),))


def _from_qsm(data: bytes) -> Model:
    return Model(data)


def backends() -> List[Dict[str, Any]]:
    """The library's back ends, as ``qs-score --list-backends`` lists them:
    dicts with name, available (this machine and build run it), why (when
    not), flags (reference, baseline, oblivious-only, simd, threads, device,
    alias, batch, and auto on the one ``auto`` runs as), summary, and note (an
    available back end's remark, such as the rule ``vqs`` and ``auto`` follow
    on this CPU; qs-score prints it after the summary)."""
    return _core.backends()


def build_info() -> Dict[str, Any]:
    """This build of libqs and this CPU: version, openmp, numa, cuda,
    cpu_detected and cpu_enabled (SIMD levels, less QS_DISABLE_CPU_FEATURES),
    auto (the back end ``auto`` runs as) and cpus (this process's CPUs)."""
    return _core.build_info()


def format_score(value: float, digits: int) -> str:
    """A score as ``qs-score`` prints it (printf's %.*g; digits 17 for
    models summed in double, 9 for float32 ones)."""
    return _core.format_score(value, digits)

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
from ._frames import frame_matrix

__all__ = ["Model", "dask_predict", "spark_predict", "backends", "build_info", "eval", "format_score", "Error", "FormatError",
           "UnsupportedError", "LimitError", "DeviceError", "__version__"]

__version__ = LIBQS_VERSION


def _is_sparse(X: Any) -> bool:
    # scipy is imported only when the caller gives a scipy object
    return type(X).__module__.startswith("scipy.sparse")


def _is_frame(X: Any) -> bool:
    return type(X).__module__.startswith("pandas") and hasattr(X, "columns")


def _output(transform: Union[bool, str], raw: Optional[bool], name: str) -> Union[bool, str]:
    """raw_score / output_margin beside transform."""
    if raw is None:
        return transform
    if not isinstance(raw, (bool, np.bool_)):
        raise TypeError("%s must be True or False" % name)
    if transform is not False and bool(raw):
        raise ValueError("%s=True asks for raw scores and transform=%r for transformed ones: "
                         "give one of them" % (name, transform))
    return transform if transform is not False else (not bool(raw))


def _threads(threads: Optional[int], num_threads: Optional[int]) -> Optional[int]:
    """num_threads, LightGBM's and XGBoost's: <= 0 all CPUs."""
    if num_threads is None:
        return threads
    if threads is not None:
        raise ValueError("give threads= or num_threads=, not both")
    if not isinstance(num_threads, int) or isinstance(num_threads, bool):
        raise TypeError("num_threads must be an int")
    return None if num_threads <= 0 else num_threads


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
    (LightGBM text, XGBoost JSON/UBJSON/binary, CatBoost JSON or ``.cbm``, ONNX,
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
            # opened by the library as the tools open a model (qs_open):
            # QS_MAX_INPUT bounds the read, which stops where the first
            # bytes show it is no model
            data = os.fsdecode(os.fspath(source))
        else:
            raise TypeError("source must be a path or bytes, not %s" % type(source).__name__)
        try:
            super().__init__(data, format)
        except OSError as e:
            if e.errno is None and isinstance(data, str):
                # Python's own exception for the file (FileNotFoundError, ...)
                with open(data, "rb"):
                    pass
            raise

    def predict(self, X: Any, *, threads: Optional[int] = None, backend: str = "auto",
                transform: Union[bool, str] = False, trees: Optional[int] = None,
                absent: str = "default", raw_score: Optional[bool] = None,
                output_margin: Optional[bool] = None, start_iteration: int = 0,
                num_threads: Optional[int] = None, validate_features: bool = True) -> np.ndarray:
        """Score the rows of X: raw scores by default (``transform=False``).

        The default differs from LightGBM's and XGBoost's ``predict``, which
        apply the output function unless asked not to: here ``transform=True``,
        ``raw_score=False`` (LightGBM's word) or ``output_margin=False``
        (XGBoost's) applies it, and ``raw_score=True`` / ``output_margin=True``
        is the default, raw.  ``num_threads``: LightGBM's and XGBoost's
        convention, 0 or -1 (or less) all CPUs, else a count as ``threads``.
        ``start_iteration``: 0 only (qs scores iterations from the first;
        ``trees=N`` keeps the first N, LightGBM's ``num_iteration``).

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

        A pandas DataFrame is read as its model's library reads it: column
        names checked against the model's feature names (refused, naming the
        first that differs, for LightGBM and XGBoost models; taken by name in
        any order for CatBoost; ``validate_features=False`` scores by position),
        category columns as the model's category codes (LightGBM's stored
        ``pandas_categorical``, XGBoost's encoder), bool, integer and nullable
        columns as numbers (``pd.NA``: missing); string columns are refused
        with the conversion that works.

        CatBoost models take CatBoost's own numbering: column j of X is
        CatBoost's feature j (``num_features`` columns), as
        ``catboost.predict`` takes it (``qs-score``'s LETOR files number it
        j + 1, as CatBoost's libsvm reader does).

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
        transform = _output(transform, raw_score, "raw_score")
        transform = _output(transform, output_margin, "output_margin")
        threads = _threads(threads, num_threads)
        if not isinstance(start_iteration, int) or isinstance(start_iteration, bool):
            raise TypeError("start_iteration must be an int")
        if start_iteration != 0:
            raise UnsupportedError(
                "start_iteration=%d: qs scores iterations from the first only (trees=N keeps "
                "the first N; iterations %d.. alone are not a model qs can lay out)"
                % (start_iteration, start_iteration))
        if _is_sparse(X):
            shape, indptr, indices, data = _csr_parts(X)
            return self._predict_csr(shape, indptr, indices, data, threads=threads,
                                     backend=backend, transform=transform, trees=trees,
                                     absent=absent)
        if absent != "default":
            raise ValueError("absent= is for sparse input; a dense X holds every value "
                             "(NaN: missing)")
        X = self._dense(X, validate_features)
        return self._predict_dense(X, threads=threads, backend=backend, transform=transform,
                                   trees=trees)

    def _dense(self, X: Any, validate_features: bool = True) -> Any:
        if _is_frame(X):
            return frame_matrix(self, X, validate_features)
        return X

    @property
    def feature_names(self) -> List[str]:
        """The feature names the model recorded ([] when it recorded none, or
        only the names its library makes up: LightGBM's Column_0, ...)."""
        names = [n for n, _ in (self._features or [])]
        return names if any(names) else []

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
        return self._leaves_dense(self._dense(X), backend=backend, trees=trees)

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
        # pickled as its .qsm image (Dask and Spark ship models so), with the
        # feature names and categories its source recorded (a .qsm keeps none)
        return (_from_qsm, (self.to_qsm(), (self._features, self._categories,
                                             self._pandas_categorical)))


class _Loaded(Model):
    """A Model rebuilt from its pickle: the .qsm image and the names and
    categories of the model it was compiled from."""

    def __init__(self, data: bytes, meta: Any) -> None:
        super().__init__(data)
        self._meta = meta

    @property
    def _features(self):
        return self._meta[0]

    @property
    def _categories(self):
        return self._meta[1]

    @property
    def _pandas_categorical(self):
        return self._meta[2]


def _from_qsm(data: bytes, meta: Any = None) -> Model:
    return _Loaded(data, meta) if meta is not None else Model(data)


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

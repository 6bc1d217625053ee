"""Scoring data frames on Dask and Spark with a qs_toolkit.Model.

Both ship the model once per worker as its .qsm image (a Model pickles as
its .qsm bytes; loading it on the worker costs what qs-score's load does,
milliseconds to a second for the largest models), and score each partition
(Dask) or Arrow batch (Spark) with one call of ``Model.predict`` on the
partition's feature columns.  The scores keep the rows' order."""
from typing import Any, Dict, Optional, Sequence

import numpy as np

__all__ = ["dask_predict", "spark_predict"]


def _columns(model, columns: Optional[Sequence[str]], frame_columns) -> list:
    if columns is None:
        columns = list(frame_columns)
    columns = list(columns)
    if len(columns) < model.num_features:
        raise ValueError("%d feature columns for a model of %d features"
                         % (len(columns), model.num_features))
    return columns


def _score_frame(pdf, model, columns, kw: Dict[str, Any], names):
    import pandas as pd
    X = pdf[columns].to_numpy(dtype=np.float64)
    s = model.predict(X, **kw)
    if s.ndim == 1:
        return pd.Series(s, index=pdf.index, name=names[0])
    return pd.DataFrame(s, index=pdf.index, columns=names)


def _names(model, kw, name: str):
    # the output's columns: one, or one per class (a transform may change it)
    import numpy as np  # noqa: F811
    probe = model.predict(np.zeros((1, model.num_features)), **kw)
    k = 1 if probe.ndim == 1 else probe.shape[1]
    return [name] if k == 1 else ["%s_%d" % (name, c) for c in range(k)]


def _joined(pdf, s, names):
    """The batch pdf with the scores s (one column per name) after its
    columns, joined in one step: assign inserts them one by one, and pandas
    warns ("PerformanceWarning: DataFrame is highly fragmented") on every
    wide Arrow batch, whose columns are blocks of their own.  A column of an
    output's name is replaced, as assign replaces it."""
    import pandas as pd
    new = pd.DataFrame({n: s[:, i] for i, n in enumerate(names)}, index=pdf.index)
    keep = [c for c in pdf.columns if c not in new.columns]
    return pd.concat([pdf[keep], new], axis=1)


def dask_predict(ddf, model, columns: Optional[Sequence[str]] = None, *, name: str = "score",
                 client=None, **predict_kw: Any):
    """Scores of every row of a Dask DataFrame: a Dask Series (or a
    DataFrame of one column per class), partition by partition, in the rows'
    order.  ``columns``: the feature columns in the model's order (default:
    every column).  ``client``: a ``distributed.Client``, to which the model
    is scattered once (broadcast to every worker) instead of being embedded
    in the task graph.  ``predict_kw``: Model.predict's options (threads
    defaults to 1: one partition per worker thread)."""
    kw = dict(predict_kw)
    kw.setdefault("threads", 1)
    columns = _columns(model, columns, ddf.columns)
    names = _names(model, kw, name)
    if len(names) == 1:
        meta: Any = (names[0], "f8")
    else:
        import pandas as pd
        meta = pd.DataFrame({n: np.zeros(0) for n in names})
    m = client.scatter(model, broadcast=True) if client is not None else model
    return ddf.map_partitions(_score_frame, m, columns, kw, names, meta=meta)


_spark_models: Dict[Any, Any] = {}


def spark_predict(df, model, columns: Optional[Sequence[str]] = None, *, name: str = "score",
                  **predict_kw: Any):
    """A Spark DataFrame with the scores added as column ``name`` (one column
    per class: ``name_0``, ``name_1``, ...), through ``mapInPandas``: the
    model is broadcast once as its .qsm image, loaded once per Python worker
    process (kept for its later tasks), and each Arrow batch is scored with
    one predict call.  ``columns``: the feature columns (default: every
    column)."""
    from pyspark.sql.types import DoubleType, StructField, StructType

    kw = dict(predict_kw)
    kw.setdefault("threads", 1)
    columns = _columns(model, columns, df.columns)
    names = _names(model, kw, name)
    import hashlib
    image = model.to_qsm()
    key = hashlib.sha256(image).hexdigest()   # the workers' cache key: the model itself
    bc = df.sparkSession.sparkContext.broadcast(image)

    def score(batches):
        # the worker's own module (imported there), so the cache outlives the task
        import qs_toolkit
        import qs_toolkit.scale as here
        m = here._spark_models.get(key)
        if m is None:
            m = here._spark_models[key] = qs_toolkit.Model(bc.value)
        for pdf in batches:
            s = m.predict(pdf[columns].to_numpy(dtype=np.float64), **kw)
            s = s.reshape(len(pdf), -1)
            yield _joined(pdf, s, names)

    schema = StructType(list(df.schema.fields) + [StructField(n, DoubleType()) for n in names])
    return df.mapInPandas(score, schema)

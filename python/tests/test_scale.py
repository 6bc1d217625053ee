"""Scale-out: Dask on a distributed.LocalCluster of 2 workers, and Spark in
local mode, where they are installed; the scores identical to one process
and in the rows' order."""
import os
import tempfile
import shutil

import numpy as np
import pytest

import qs_toolkit as qs
from conftest import FIX


def frame(m, n=20000, seed=11):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m.num_features))
    X[rng.random(X.shape) < 0.1] = 0.0
    cols = ["f%d" % j for j in range(m.num_features)]
    return X, pd.DataFrame(X, columns=cols), cols


def test_dask_local_cluster_two_workers():
    dd = pytest.importorskip("dask.dataframe", reason="Dask (Debian: python3-dask) is not installed")
    distributed = pytest.importorskip("distributed",
                                      reason="distributed (Debian: python3-distributed) is not installed")
    m = qs.Model(os.path.join(FIX, "lgb-multiclass", "model.txt.zst"))
    X, pdf, cols = frame(m)
    pdf["other"] = np.arange(len(pdf))
    want = m.predict(X, threads=1)
    ddf = dd.from_pandas(pdf, npartitions=7)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        got = qs.dask_predict(ddf, m, cols, client=client).compute()
        assert list(got.columns) == ["score_%d" % c for c in range(5)]
        assert np.array_equal(got.index.to_numpy(), np.arange(len(pdf)))     # in order
        assert np.array_equal(got.to_numpy(), want)
        # the partitions ran on both workers
        where = client.run(lambda: __import__("os").getpid())
        assert len(set(where.values())) == 2
        # transformed; the model embedded in the graph (no client)
        got = qs.dask_predict(ddf, m, cols, transform=True, name="p").compute()
        assert list(got.columns) == ["p_%d" % c for c in range(5)]
        assert np.array_equal(got.to_numpy(), m.predict(X, transform=True))
        # one output column: a Series
        b = qs.Model(os.path.join(FIX, "lgb-l8", "model.txt.zst"))
        Xb, pdfb, colsb = frame(b, n=3000)
        got = qs.dask_predict(dd.from_pandas(pdfb, npartitions=4), b, colsb).compute()
        assert got.name == "score" and np.array_equal(got.to_numpy(), b.predict(Xb))


def test_spark_local_mode():
    pytest.importorskip("pyspark", reason="pyspark is not installed (PyPI only: see the "
                                          "README's Spark recipe)")
    pytest.importorskip("pyarrow", reason="pyarrow (needed by mapInPandas) is not installed")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark")
    import sys
    from pyspark.sql import SparkSession
    # the workers run this interpreter (with its PYTHONPATH: qs_toolkit)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    m = qs.Model(os.path.join(FIX, "lgb-multiclass", "model.txt.zst"))
    X, pdf, cols = frame(m, n=5000)
    pdf.insert(0, "id", np.arange(len(pdf)))
    spark = (SparkSession.builder.master("local[2]").appName("qs-toolkit-test")
             .config("spark.ui.enabled", "false")
             # its scratch beside the test's (TMPDIR), not in /tmp
             .config("spark.local.dir", tempfile.gettempdir())
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "700").getOrCreate())
    try:
        df = spark.createDataFrame(pdf).repartition(3)
        out = qs.spark_predict(df, m, cols, name="s").toPandas().sort_values("id")
        got = out[["s_%d" % c for c in range(5)]].to_numpy()
        assert np.array_equal(got, m.predict(X, threads=1))
        out = qs.spark_predict(df, m, cols, transform=True).toPandas().sort_values("id")
        assert np.array_equal(out[["score_%d" % c for c in range(5)]].to_numpy(),
                              m.predict(X, transform=True))
    finally:
        spark.stop()


def test_spark_batch_joined_without_fragmentation_warning():
    # mapInPandas hands over Arrow batches whose columns are blocks of their
    # own: the scores are joined in one step, with no PerformanceWarning,
    # after the batch's columns, an output's name replacing a column of it
    pd = pytest.importorskip("pandas")
    import warnings
    from qs_toolkit.scale import _joined
    n, F = 50, 301
    pdf = pd.concat([pd.DataFrame({"c%d" % j: np.full(n, float(j))}) for j in range(F)], axis=1)
    s = np.arange(2.0 * n).reshape(n, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _joined(pdf, s, ["s_0", "s_1"])
        again = _joined(out, s + 1, ["s_1"])
    assert list(out.columns) == list(pdf.columns) + ["s_0", "s_1"]
    assert np.array_equal(out[["s_0", "s_1"]].to_numpy(), s)
    assert np.array_equal(out[list(pdf.columns)].to_numpy(), pdf.to_numpy())
    assert list(again.columns) == list(pdf.columns) + ["s_0", "s_1"]
    assert np.array_equal(again["s_1"].to_numpy(), s[:, 0] + 1)

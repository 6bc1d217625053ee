"""The binding's API against the command-line tools and the libraries' own
outputs kept in tests/fixtures: layouts of X, threads, trees=, transform=,
predict_leaves, model facts, back ends, eval, the GIL."""
import json
import os
import pickle
import threading
import time

import numpy as np
import pytest

import qs_toolkit as qs
from conftest import FIX, Letor, digits_of, fmt_scores, run_tool

ZB = os.path.join(FIX, "zero-band")
IT = os.path.join(FIX, "iterations")


def values(path):
    rows = [l.split() for l in open(path) if l.strip()]
    a = np.array([[float(v) for v in r] for r in rows])
    return a[:, 0] if a.shape[1] == 1 else a


def same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


@pytest.fixture(scope="module")
def lgb():
    return qs.Model(os.path.join(FIX, "lgb-l8", "model.txt.zst"))


@pytest.mark.parametrize("name", ["binary", "linear", "multi3", "nomissing", "poisson"])
def test_lightgbm_predict_dense_csr_f32(name):
    """LightGBM 4.7.0's own predict() (tests/fixtures/zero-band): a dense
    float64 matrix, a CSR matrix, a float32 matrix, raw and transformed."""
    m = qs.Model(os.path.join(ZB, name + ".txt.zst"))
    L = Letor(os.path.join(ZB, "docs.letor"), "double")
    X = L.dense(m.num_features, 0.0)
    assert same(m.predict(X), values(os.path.join(ZB, name + ".dense.raw.txt")))
    assert same(m.predict(L.csr(m.num_features)), values(os.path.join(ZB, name + ".libsvm.raw.txt")))
    F = np.fromfile(os.path.join(ZB, "docs.f32"), dtype="<f4").reshape(len(L.rows), -1)
    assert same(m.predict(F[:, :m.num_features]), values(os.path.join(ZB, name + ".f32.raw.txt")))
    assert same(m.predict(X, transform=True), values(os.path.join(ZB, name + ".dense.out.txt")))


def test_layouts_give_the_same_bits(lgb):
    """C order, Fortran order, strided views, negative strides, float32, a
    slice of a wider matrix: the same scores as the C-contiguous matrix."""
    rng = np.random.default_rng(7)
    nf = lgb.num_features
    X = rng.normal(size=(999, nf))
    X[rng.random(X.shape) < 0.2] = 0.0
    X[rng.random(X.shape) < 0.05] = np.nan
    want = lgb.predict(X)
    assert want.shape == (999,)
    assert same(lgb.predict(np.asfortranarray(X)), want)
    wide = np.zeros((999, 2 * nf))
    wide[:, ::2] = X
    assert same(lgb.predict(wide[:, ::2]), want)
    assert same(lgb.predict(np.ascontiguousarray(X[::-1])[::-1]), want)
    big = np.zeros((1998, nf + 3))
    big[::2, :nf] = X
    assert same(lgb.predict(big[::2, :nf]), want)
    assert same(lgb.predict(X[::3]), want[::3])
    F = X.astype(np.float32)
    assert same(lgb.predict(F), lgb.predict(F.astype(np.float64)))
    assert same(lgb.predict(np.asfortranarray(F)), lgb.predict(F.astype(np.float64)))
    # read in place: the caller's matrix is not changed (the zero band is
    # applied to a copy of the row)
    Y = X.copy()
    Y[0, 0] = 1e-40
    before = Y.copy()
    lgb.predict(Y)
    assert same(Y, before)


def test_threads_and_chunks_give_the_same_bits(lgb):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40000, lgb.num_features))
    want = lgb.predict(X, threads=1)
    for t in (2, 3, 7):
        assert same(lgb.predict(X, threads=t), want)
    # the converted path (float32 and Fortran order go a chunk at a time)
    F = np.asfortranarray(X.astype(np.float32))
    assert same(lgb.predict(F, threads=1), lgb.predict(F, threads=3))


def test_xgboost_float64_rounds_to_float32():
    """A model that reads float32 values: float64 input is rounded as
    XGBoost rounds it (to float32), never compared as a double."""
    m = qs.Model(os.path.join(FIX, "xgb-tiny", "model.json"))
    assert m.precision == "float"
    L = Letor(os.path.join(FIX, "xgb-tiny", "docs.letor"), "float")
    X = L.dense(m.num_features, np.nan)
    want = m.predict(X.astype(np.float32))
    assert same(m.predict(X), want)
    nxt = np.nextafter(X.astype(np.float32), np.float32(np.inf)).astype(np.float64)
    mid = (X + nxt) / 2      # doubles between two floats: rounded first
    assert same(m.predict(mid), m.predict(mid.astype(np.float32)))
    assert same(want, values(os.path.join(FIX, "xgb-tiny", "expected.txt")).astype(np.float32))


def test_multiclass_columns_and_transform(tmp_path):
    path = os.path.join(FIX, "lgb-multiclass", "model.txt.zst")
    docs = os.path.join(FIX, "lgb-multiclass", "docs.letor")
    m = qs.Model(path)
    assert m.num_classes == 5
    L = Letor(docs, "double")
    C = L.csr(m.num_features)
    S = m.predict(C)
    assert S.shape == (len(L.rows), 5)
    qsm = tmp_path / "m.qsm"
    qsm.write_bytes(m.to_qsm())
    assert fmt_scores(S, 17) == run_tool("qs-score", str(qsm), docs)
    assert fmt_scores(m.predict(C, transform=True), 17) == \
        run_tool("qs-score", "--transform", str(qsm), docs)
    assert fmt_scores(m.predict(C, transform="none"), 17) == \
        run_tool("qs-score", "--transform", "none", str(qsm), docs)
    assert same(S, values(os.path.join(FIX, "lgb-multiclass", "expected.txt")))


@pytest.mark.parametrize("name,ext,iters", [("lgb-multiclass", "txt.zst", [1, 3, 8, 20]),
                                            ("lgb-regression", "txt.zst", [4]),
                                            ("lgb-wide", "txt.zst", [2]),
                                            ("xgb-multiclass", "json.zst", [2, 6])])
def test_trees_and_leaves_against_the_library(name, ext, iters):
    """predict(trees=N) and predict_leaves against the library's own
    predict(num_iteration=N / iteration_range) and pred_leaf
    (tests/fixtures/iterations)."""
    m = qs.Model(os.path.join(IT, "%s.%s" % (name, ext)))
    L = Letor(os.path.join(IT, name + ".docs.letor"), m.precision)
    C = L.csr(m.num_features)
    for n in iters:
        f = os.path.join(IT, "%s.iter%d.txt" % (name, n))
        if os.path.exists(f):
            got = m.predict(C, trees=n)
            want = values(f)
            if m.precision == "float":
                got, want = got.astype(np.float32), want.astype(np.float32)
            assert same(got, want), "trees=%d" % n
        f = os.path.join(IT, "%s.leaf.iter%d.txt" % (name, n))
        if os.path.exists(f):
            assert same(m.predict_leaves(C, trees=n), values(f).astype(np.int64)), "leaves %d" % n
    f = os.path.join(IT, name + ".leaf.txt")
    if os.path.exists(f):
        want = values(f).astype(np.int64).reshape(len(L.rows), -1)
        got = m.predict_leaves(C)
        assert got.dtype == np.int32 and got.shape == (len(L.rows), m.num_trees)
        assert same(got, want)
        assert same(m.predict_leaves(C, backend="walk"), want)


@pytest.mark.parametrize("name,iters", [("forest", [1, 7, 10]), ("forest-softprob", [1, 2, 5]),
                                        ("forest-logistic", [2])])
def test_trees_of_xgboost_boosted_forests(name, iters):
    """predict(trees=N) on XGBoost boosted random forests in XGBoost's binary
    format and as JSON: N iterations of num_parallel_tree trees per class,
    against XGBoost 1.7.6's iteration_range=(0, N) (tests/fixtures/xgboost-binary)."""
    d = os.path.join(FIX, "xgboost-binary")
    L = Letor(os.path.join(d, "docs.letor"), "float")
    for path in (os.path.join(d, name + ".model.zst"), os.path.join(d, name + ".json.zst")):
        m = qs.Model(path)
        X = L.dense(m.num_features, np.nan)
        for n in iters:
            want = open(os.path.join(d, "%s.iter%d.txt" % (name, n)), "rb").read()
            assert fmt_scores(m.predict(X, trees=n), 9) == want, (path, n)
        assert fmt_scores(m.predict(X), 9) == open(os.path.join(d, name + ".raw.txt"), "rb").read()


def test_leaves_and_trees_against_qs_score(tmp_path):
    path = os.path.join(FIX, "lgb-l8", "model.txt.zst")
    docs = os.path.join(FIX, "lgb-l8", "docs.letor")
    m = qs.Model(path)
    qsm = tmp_path / "m.qsm"
    run_tool("qs-compile", "-o", str(qsm), path)
    C = Letor(docs, "double").csr(m.num_features)
    want = run_tool("qs-score", "--leaves", str(qsm), docs)
    got = "".join("\t".join(str(v) for v in r) + "\n" for r in m.predict_leaves(C)).encode()
    assert got == want
    assert same(m.predict(C, trees=np.int64(7), threads=np.int32(2)), m.predict(C, trees=7))
    for n in (1, 7, 10**9):
        assert fmt_scores(m.predict(C, trees=n), 17) == \
            run_tool("qs-score", "--trees", str(n), str(qsm), docs)
    # a dense matrix: LightGBM's dense reading (the zero band), as qs-score --lightgbm-dense
    X = Letor(docs, "double").dense(m.num_features, 0.0)
    assert fmt_scores(m.predict(X), 17) == run_tool("qs-score", "--lightgbm-dense", str(qsm), docs)


def test_model_facts_and_info_as_qs_compile(tmp_path):
    path = os.path.join(FIX, "lgb-l8", "model.txt.zst")
    m = qs.Model(path)
    assert (m.num_features, m.num_classes, m.source) == (m.info["features"]["count"], 1, "lightgbm")
    assert m.objective == m.info["objective"] and m.transform == m.info["transform"]
    want = json.loads(run_tool("qs-compile", "--info", "--json", path))
    got = m.info
    assert got.pop("kind") == want["file"]["kind"]
    for k in ("file", "categories"):
        want.pop(k, None)
    assert got == want
    # a .qsm: its sections too
    qsm = tmp_path / "m.qsm"
    qsm.write_bytes(m.to_qsm())
    want = json.loads(run_tool("qs-compile", "--info", "--json", str(qsm)))
    got = qs.Model(str(qsm)).info
    assert got.pop("kind") == want["file"]["kind"]
    for k in ("file", "categories"):
        want.pop(k, None)
    assert got == want and got["qsm"]["sections"]
    # bytes, a path-like, format=
    import pathlib
    raw = open(path, "rb").read()
    X = np.zeros((3, m.num_features))
    for other in (qs.Model(raw), qs.Model(pathlib.Path(path)), qs.Model(raw, format="lightgbm")):
        assert same(other.predict(X), m.predict(X))
    # pickled as its .qsm (how Dask and Spark ship it)
    again = pickle.loads(pickle.dumps(m))
    assert same(again.predict(X), m.predict(X)) and again.to_qsm() == m.to_qsm()


def test_backends_as_list_backends():
    lines = run_tool("qs-score", "--list-backends").decode().splitlines()
    got = qs.backends()
    assert len(got) == len(lines)
    for b, line in zip(got, lines):
        name, avail, flags, summary = line.split("\t")
        assert b["name"] == name
        assert summary == b["summary"] + ("; " + b["note"] if b["note"] else "")
        assert avail == ("yes" if b["available"] else "no: " + b["why"])
        assert flags == (",".join(b["flags"]) or "-")
    bi = qs.build_info()
    assert bi["version"] == qs.__version__ and bi["auto"] in [b["name"] for b in got]
    assert [b["name"] for b in got if "auto" in b["flags"]] == [bi["auto"]]


def test_eval_ndcg_as_qs_eval(tmp_path):
    path = os.path.join(FIX, "lgb-l8", "model.txt.zst")
    docs = os.path.join(FIX, "lgb-l8", "docs.letor")
    m = qs.Model(path)
    L = Letor(docs, "double")
    s = m.predict(L.csr(m.num_features))
    qsm = tmp_path / "m.qsm"
    qsm.write_bytes(m.to_qsm())
    ann = run_tool("qs-score", "--annotate", str(qsm), docs)
    for args, kw in ((["-k", "10"], dict(k=10)), (["-k", "5"], dict(k=5, preset="lightgbm")),
                     (["-k", "0"], dict(k=0, gain="linear", group="qid"))):
        opts = list(args)
        if kw.get("preset"):
            opts += ["--like", kw["preset"]]
        if kw.get("gain"):
            opts += ["--gain=linear", "--group=qid"]
        out = run_tool("qs-eval", *opts, input=ann).decode().splitlines()
        mean = [l for l in out if l.startswith("mean")][0].split("\t")[1]
        got = qs.eval.ndcg([float(x) for x in L.labels], s, L.qids, **kw)
        assert "%.12f" % got == mean, (args, kw)
    mean, queries = qs.eval.ndcg(L.labels, s, L.qids, k=[1, 10], per_query=True)
    assert len(mean) == 2 and len(queries) == len(set(L.qids))
    with pytest.raises(qs.FormatError, match="NaN"):
        qs.eval.ndcg([1, 0], [np.nan, 1.0])


def test_gil_released_while_scoring():
    """Another Python thread runs while a long predict() is in the library."""
    m = qs.Model(os.path.join(FIX, "lgb-l8", "model.txt.zst"))
    X = np.random.default_rng(3).normal(size=(1, m.num_features))
    big = np.broadcast_to(X, (3_000_000, m.num_features))   # one row, stride 0: no memory
    state = {"started": False, "done": False}

    def work():
        state["started"] = True
        m.predict(big, threads=1)
        state["done"] = True

    t = threading.Thread(target=work)
    t.start()
    while not state["started"]:
        time.sleep(0.001)
    time.sleep(0.05)
    small = m.predict(X, threads=1)   # scored while the other call runs
    seen_running = not state["done"]
    t.join()
    assert seen_running, "the second call waited for the first: the GIL was held"
    assert same(small, m.predict(big[:1]))


def test_python_threads_side_by_side():
    m = qs.Model(os.path.join(FIX, "lgb-l8", "model.txt.zst"))
    rng = np.random.default_rng(5)
    Xs = [rng.normal(size=(5000, m.num_features)) for _ in range(4)]
    want = [m.predict(X, threads=1) for X in Xs]
    got = [None] * 4
    backends = ["auto", "walk", "qs", "vpred"]

    def work(i):
        got[i] = m.predict(Xs[i], threads=1, backend=backends[i])

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(same(g, w) for g, w in zip(got, want))


def test_nan_inf_and_empty_as_qs_score(tmp_path):
    """NaN is a missing value and ±inf a value, as qs-score and the libraries
    read them; zero rows give zero scores."""
    path = os.path.join(FIX, "lgb-l8", "model.txt.zst")
    m = qs.Model(path)
    nf = m.num_features
    docs = tmp_path / "d.letor"
    docs.write_text("".join("0 qid:1 %d:%s 3:1.5\n" % (j % nf, v)
                            for j, v in enumerate(["nan", "inf", "-inf", "-nan", "0"] * 4)))
    qsm = tmp_path / "m.qsm"
    qsm.write_bytes(m.to_qsm())
    L = Letor(str(docs), "double")
    want = run_tool("qs-score", "--lightgbm-dense", str(qsm), str(docs))
    assert fmt_scores(m.predict(L.dense(nf, 0.0)), 17) == want
    assert m.predict(np.zeros((0, nf))).shape == (0,)
    assert m.predict_leaves(np.zeros((0, nf))).shape == (0, m.num_trees)
    import scipy.sparse
    assert m.predict(scipy.sparse.csr_matrix((0, nf))).shape == (0,)


@pytest.mark.parametrize("name", ["h3-modes", "h5-member", "lgb-reg", "sk-gbc3", "sk-rfr",
                                  "xgb-reg"])
def test_onnx_as_qs_score(name, tmp_path):
    """ONNX models (as ONNX Runtime scores them, tests/fixtures/onnx): the
    binding gives qs-score's bytes, dense and CSR."""
    d = os.path.join(FIX, "onnx")
    path, docs = os.path.join(d, name + ".onnx"), os.path.join(d, "docs.letor")
    m = qs.Model(path)
    assert m.source == "onnx"
    qsm = tmp_path / "m.qsm"
    run_tool("qs-compile", "-o", str(qsm), path)
    want = run_tool("qs-score", str(qsm), docs)
    L = Letor(docs, m.precision)
    dig = digits_of(m)
    assert fmt_scores(m.predict(L.csr(m.num_features)), dig) == want
    assert fmt_scores(m.predict(L.dense(m.num_features, 0.0)), dig) == want


def test_onnx_average_trees_as_onnx_runtime():
    """trees=N on an ONNX AVERAGE model: ONNX Runtime's output of the model
    cut to its first N trees (tests/fixtures/onnx-average/*.tN.pred), which
    averages over those N, as qs-score --trees N gives it; a regressor of
    several targets with base values is refused."""
    import glob
    d = os.path.join(FIX, "onnx-average")
    L = Letor(os.path.join(d, "docs.letor"), "float")
    checked = refused = 0
    for pred in sorted(glob.glob(os.path.join(d, "*.t*.pred"))):
        base, n = pred[:-len(".pred")].rsplit(".t", 1)
        m = qs.Model(base + ".onnx")
        X = L.dense(m.num_features, 0.0)
        biased = m.num_classes > 1 and any(
            l.startswith("out-bias") and not l.split()[2] == "0x0p+0"
            for l in run_tool("qs-convert", base + ".onnx").decode().splitlines())
        if biased:
            with pytest.raises(qs.UnsupportedError, match="base values"):
                m.predict(X, trees=int(n))
            refused += 1
            continue
        assert fmt_scores(m.predict(X, trees=int(n)), 9) == open(pred, "rb").read(), pred
        checked += 1
    assert checked >= 20 and refused >= 3


def test_canonical_text_and_qsm_inputs(tmp_path):
    """The same scores from the foreign model, its canonical text
    (qs-convert's output) and its .qsm, in memory or from a file."""
    path = os.path.join(FIX, "lgb-multiclass", "model.txt.zst")
    text = run_tool("qs-convert", path)
    X = np.random.default_rng(2).normal(size=(300, qs.Model(path).num_features))
    want = qs.Model(path).predict(X)
    qsm = tmp_path / "m.qsm"
    run_tool("qs-compile", "-o", str(qsm), path)
    for src in (text, str(qsm), qsm.read_bytes()):
        assert same(qs.Model(src).predict(X), want)
    assert qs.Model(text).info["kind"] != qs.Model(str(qsm)).info["kind"]


def test_pandas_frame_as_its_matrix(lgb):
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(9).normal(size=(100, lgb.num_features))
    df = pd.DataFrame(X, columns=["c%d" % j for j in range(lgb.num_features)])
    assert same(lgb.predict(df), lgb.predict(X))
    with pytest.raises(TypeError, match="column 'c0' of X holds object values, which are not numbers"):
        lgb.predict(df.assign(c0=df.c0.astype(str)))


def test_info_with_a_tuning_record(tmp_path):
    """A .qsm that qs-blocktune tuned: its record in info, as qs-compile
    --info --json gives it (the times unrounded), and the same scores."""
    src = os.path.join(FIX, "lgb-l8")
    qsm, tuned, docs = tmp_path / "m.qsm", tmp_path / "t.qsm", tmp_path / "d.letor"
    run_tool("qs-compile", "-o", str(qsm), os.path.join(src, "model.txt.zst"))
    docs.write_bytes(open(os.path.join(src, "docs.letor"), "rb").read() * 2)
    run_tool("qs-blocktune", "--budget", "1", "--repeat", "1", "--backend", "qs", str(qsm),
             str(docs), "-o", str(tuned))
    got = qs.Model(str(tuned)).info
    want = json.loads(run_tool("qs-compile", "--info", "--json", str(tuned)))
    for k in ("default_ns", "tuned_ns"):
        assert got["tuning"].pop(k) == pytest.approx(want["tuning"].pop(k), rel=1e-5)
    assert got.pop("kind") == want.pop("file")["kind"]
    want.pop("categories", None)
    assert got == want and got["tuning"]["this_machine"]
    X = np.random.default_rng(4).normal(size=(500, got["features"]["count"]))
    assert same(qs.Model(str(tuned)).predict(X), qs.Model(str(qsm)).predict(X))

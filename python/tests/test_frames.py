"""Data frames, CatBoost's numbering and predict's arguments, against the
training libraries themselves (PyPI's lightgbm, xgboost, catboost: each test
skips, saying so, where its library is not importable).  Models are trained
here on small random frames, so every test compares with the library that
made the model, on the same frame."""
import pickle

import numpy as np
import pytest

import qs_toolkit as qs

pd = pytest.importorskip("pandas")

N = 2000


def frame(seed=0, n=N):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.normal(size=n),
        "c": pd.Categorical(rng.choice(["x", "y", "z", "w"], n)),
        "b": rng.normal(size=n),
        "d": pd.Categorical(rng.choice([3, 1, 7], n)),
    })


def target(df):
    return (df.a + (df.c == "y") * 2 + (df.c == "w") + (df.d == 7) * 1.5 - df.b * 0.5).to_numpy()


@pytest.fixture(scope="module")
def lgb_model(tmp_path_factory):
    lgb = pytest.importorskip("lightgbm", reason="lightgbm (PyPI) is not importable")
    df = frame()
    bst = lgb.train({"verbose": -1, "min_data_per_group": 5, "cat_smooth": 1,
                     "objective": "binary"}, lgb.Dataset(df, (target(df) > 1).astype(int)), 20)
    p = str(tmp_path_factory.mktemp("lgb") / "model.txt")
    bst.save_model(p)
    return lgb.Booster(model_file=p), qs.Model(p)


@pytest.fixture(scope="module")
def xgb_model(tmp_path_factory):
    xgb = pytest.importorskip("xgboost", reason="xgboost (PyPI) is not importable")
    df = frame()
    bst = xgb.train({"tree_method": "hist", "max_cat_to_onehot": 1},
                    xgb.DMatrix(df, target(df), enable_categorical=True), 20)
    p = str(tmp_path_factory.mktemp("xgb") / "model.json")
    bst.save_model(p)
    return xgb.Booster(model_file=p), qs.Model(p)


def test_lightgbm_category_frames_exact(lgb_model):
    bst, m = lgb_model
    assert m._pandas_categorical is not None
    df = frame(1)
    # raw and transformed, the libraries' words too
    assert np.array_equal(m.predict(df), bst.predict(df, raw_score=True))
    assert np.array_equal(m.predict(df, raw_score=False), bst.predict(df))
    assert np.array_equal(m.predict(df, transform=True), bst.predict(df))
    # categories in another order, one the model never saw, a missing value:
    # LightGBM's set_categories to its stored lists
    d2 = df.copy()
    d2["c"] = pd.Categorical(d2["c"].astype(str), categories=["z", "q", "y", "x", "w"])
    d2.loc[d2.index[:40], "c"] = "q"
    d2.loc[d2.index[40:60], "c"] = None
    d2["d"] = pd.Categorical(d2["d"].astype(int), categories=[7, 3, 1])
    want = bst.predict(d2, raw_score=True)
    assert np.array_equal(m.predict(d2), want)
    # what the binding did before: the category values' codes as they came
    own = np.column_stack([d2.a, d2.c.cat.codes, d2.b, d2.d.cat.codes]).astype(float)
    assert not np.array_equal(m.predict(own), want)


def test_lightgbm_names_strings_nullable(lgb_model):
    bst, m = lgb_model
    df = frame(2, 300)
    swapped = df[["b", "a", "c", "d"]]
    with pytest.raises(ValueError, match="column 0 of X is 'b' where the model's feature 0 is 'a'"):
        m.predict(swapped)
    # by position, as LightGBM's predict does by default
    assert np.array_equal(m.predict(swapped, validate_features=False),
                          bst.predict(swapped, raw_score=True))
    # strings: refused with a conversion that works
    s = df.assign(c=df.c.astype(str))
    with pytest.raises(TypeError, match=r"astype\('category'\)"):
        m.predict(s)
    s["c"] = s["c"].astype("category")
    assert np.array_equal(m.predict(s), bst.predict(df, raw_score=True))
    # nullable float and integer columns: pd.NA is missing
    n = df.assign(a=df.a.astype("Float64"), b=df.b.round().astype("Int64"))
    n.loc[n.index[:30], "a"] = pd.NA
    n.loc[n.index[10:50], "b"] = pd.NA
    plain = n.assign(a=n.a.astype("float64"), b=n.b.astype("float64"))
    assert np.array_equal(m.predict(n), bst.predict(plain, raw_score=True))
    # a category column too few
    with pytest.raises(ValueError, match="pandas_categorical"):
        m.predict(df.assign(d=df.d.astype(int)))


def test_xgboost_category_frames_exact(xgb_model):
    xgb = pytest.importorskip("xgboost")
    bst, m = xgb_model
    df = frame(3)
    want = bst.predict(xgb.DMatrix(df, enable_categorical=True), output_margin=True)
    got = m.predict(df)
    assert np.array_equal(got.astype(np.float32), want)
    assert np.array_equal(m.predict(df, output_margin=False).astype(np.float32),
                          bst.predict(xgb.DMatrix(df, enable_categorical=True)))
    if not m._categories:
        pytest.skip("xgboost %s writes no category encoder (3.1+ does)" % xgb.__version__)
    # categories in another order and with one unused: re-coded by value
    d2 = df.copy()
    d2["c"] = pd.Categorical(d2["c"].astype(str), categories=["z", "q", "y", "x", "w"])
    d2["d"] = pd.Categorical(d2["d"].astype(int), categories=[7, 3, 1])
    d2.loc[d2.index[:30], "c"] = None
    want = bst.predict(xgb.DMatrix(d2, enable_categorical=True), output_margin=True)
    assert np.array_equal(m.predict(d2).astype(np.float32), want)
    # a row of a category never seen in training: refused
    d2.loc[d2.index[40], "c"] = "q"
    with pytest.raises(ValueError, match="'q', a category the model was not trained on"):
        m.predict(d2)
    # names: refused as XGBoost refuses them
    with pytest.raises(ValueError, match="as XGBoost's predict does"):
        m.predict(df[["a", "b", "c", "d"]])
    with pytest.raises(ValueError):
        bst.predict(xgb.DMatrix(df[["a", "b", "c", "d"]], enable_categorical=True))
    # pickled (Dask, Spark): the names and categories travel with the image
    m2 = pickle.loads(pickle.dumps(m))
    assert np.array_equal(m2.predict(df), got)


def test_catboost_numbering_and_names(tmp_path):
    cb = pytest.importorskip("catboost", reason="catboost (PyPI) is not importable")
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"p": rng.normal(size=N), "q": rng.normal(size=N), "r": rng.normal(size=N)})
    y = df.p * 2 + df.q - (df.r > 0.3)
    model = cb.CatBoostRegressor(iterations=30, depth=4, verbose=0, random_seed=1,
                                  allow_writing_files=False).fit(df, y)
    p = str(tmp_path / "m.json")
    model.save_model(p, format="json")
    m = qs.Model(p)
    assert m.num_features == 3 and m.feature_names == ["p", "q", "r"]
    X = df.head(500).to_numpy()
    want = model.predict(X, prediction_type="RawFormulaVal")
    # CatBoost's own (n, F) matrix, dense and CSR; float32 too
    assert np.array_equal(m.predict(X), want)
    assert np.array_equal(m.predict(X.astype(np.float32)), want)
    sp = pytest.importorskip("scipy.sparse")
    Xs = X.copy()
    Xs[::3, 1] = 0.0
    assert np.array_equal(m.predict(sp.csr_matrix(Xs)),
                          model.predict(Xs, prediction_type="RawFormulaVal"))
    # a frame by name, in any order, as CatBoost takes it
    assert np.array_equal(m.predict(df.head(500)[["r", "p", "q"]]), want)
    with pytest.raises(ValueError, match="'zz'"):
        m.predict(df.head(5).rename(columns={"p": "zz"}))
    with pytest.raises(ValueError, match="X has 2 columns, the model has 3 features"):
        m.predict(X[:, :2])


def test_predict_arguments(lgb_model):
    bst, m = lgb_model
    df = frame(5, 200)
    raw = m.predict(df)
    assert np.array_equal(m.predict(df, raw_score=True), raw)
    assert np.array_equal(m.predict(df, output_margin=True), raw)
    for t in (0, -1, -8):
        assert np.array_equal(m.predict(df, num_threads=t), raw)
    assert np.array_equal(m.predict(df, num_threads=2), raw)
    assert np.array_equal(m.predict(df, start_iteration=0, trees=5),
                          bst.predict(df, raw_score=True, num_iteration=5))
    with pytest.raises(qs.UnsupportedError, match="start_iteration=3"):
        m.predict(df, start_iteration=3)
    with pytest.raises(ValueError, match="raw_score=True asks for raw scores"):
        m.predict(df, raw_score=True, transform=True)
    with pytest.raises(ValueError, match="not both"):
        m.predict(df, threads=1, num_threads=1)
    doc = qs.Model.predict.__doc__.strip().splitlines()[0]
    assert "raw scores by default" in doc

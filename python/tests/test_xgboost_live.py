"""Against XGBoost's own predict, live, where XGBoost is installed (Debian:
python3-xgboost): models trained here, scored by XGBoost and by the binding
from the same NumPy and SciPy matrices.  (LightGBM and CatBoost are not
Debian packages: their own predict() outputs are the oracle files and
fixtures of test_oracles.py and test_api.py.)"""
import numpy as np
import pytest

import qs_toolkit as qs

xgb = pytest.importorskip("xgboost", reason="XGBoost (Debian: python3-xgboost) is not installed")


def data(n=3000, nf=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, nf)).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 > 0.5).astype(np.float32)
    return X, y


@pytest.mark.parametrize("objective,extra", [("binary:logistic", {}),
                                             ("reg:squarederror", {"max_depth": 7}),
                                             ("rank:ndcg", {}),
                                             ("multi:softprob", {"num_class": 3})])
def test_xgboost_predict(objective, extra, tmp_path):
    X, y = data()
    if objective == "multi:softprob":
        y = (np.nan_to_num(X[:, 2]) > 0).astype(np.float32) + (np.nan_to_num(X[:, 3]) > 1)
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, "nthread": 1,
              "tree_method": "hist", "seed": 1}
    params.update(extra)
    d = xgb.DMatrix(X, label=y)
    if objective.startswith("rank:"):
        d.set_group([30] * (len(y) // 30))
    booster = xgb.train(params, d, num_boost_round=40)
    path = tmp_path / "model.json"
    booster.save_model(str(path))
    m = qs.Model(str(path))
    assert m.source == "xgboost"

    T = data(n=2000, seed=5)[0]
    dt = xgb.DMatrix(T, nthread=1)
    margin = booster.predict(dt, output_margin=True)
    assert np.array_equal(m.predict(T).astype(np.float32), margin)
    # float64 input: XGBoost rounds to float32, so does the binding
    assert np.array_equal(m.predict(T.astype(np.float64)).astype(np.float32), margin)
    if objective != "rank:ndcg":
        out = booster.predict(dt)
        assert np.array_equal(m.predict(T, transform=True).astype(np.float32), out)
    # float64 values just below each threshold t that round to t as float32:
    # XGBoost reads them as t (x < t is false: right); compared as doubles
    # they would go left
    import json
    trees = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    rows = []
    for tr in trees:
        for f, t, left in zip(tr["split_indices"], tr["split_conditions"], tr["left_children"]):
            if left != -1:
                r = np.array(T[len(rows) % len(T)], dtype=np.float64)
                r[f] = np.nextafter(np.float64(np.float32(t)), -np.inf)
                rows.append(r)
    E = np.array(rows)
    assert not np.array_equal(E, E.astype(np.float32).astype(np.float64))
    assert np.array_equal(m.predict(E).astype(np.float32),
                          booster.predict(xgb.DMatrix(E, nthread=1), output_margin=True))
    # iterations and leaves
    assert np.array_equal(m.predict(T, trees=7).astype(np.float32),
                          booster.predict(dt, output_margin=True, iteration_range=(0, 7)))
    leaves = booster.predict(dt, pred_leaf=True).astype(np.int64)
    assert np.array_equal(m.predict_leaves(T).reshape(leaves.shape), leaves)

    # a CSR matrix: XGBoost reads an absent entry as missing, so does the binding
    import scipy.sparse
    Z = np.where(np.isnan(T), 0, T)
    Z[:, 5] = 0.0
    C = scipy.sparse.csr_matrix(Z)
    assert np.array_equal(m.predict(C).astype(np.float32),
                          booster.predict(xgb.DMatrix(C, nthread=1), output_margin=True))


@pytest.mark.parametrize("objective,extra,fmt", [
    ("reg:squarederror", {"num_parallel_tree": 5, "subsample": 0.7}, "model"),
    ("multi:softprob", {"num_class": 3, "num_parallel_tree": 4, "subsample": 0.7}, "model"),
    ("binary:logistic", {"num_parallel_tree": 3, "colsample_bynode": 0.7}, "json"),
    ("binary:logistic", {}, "model"),
    ("multi:softprob", {"num_class": 3, "booster": "dart", "rate_drop": 0.3}, "model")])
def test_xgboost_binary_and_forests(objective, extra, fmt, tmp_path):
    """Boosted random forests and the binary format (save_model("m.model"),
    XGBoost 1.x's default): the model loaded from the file, whole and
    trees=N (iteration_range=(0, N): num_parallel_tree trees per class an
    iteration), as XGBoost predicts from the same file."""
    X, y = data()
    if objective == "multi:softprob":
        y = (np.nan_to_num(X[:, 2]) > 0).astype(np.float32) + (np.nan_to_num(X[:, 3]) > 1)
    params = {"objective": objective, "max_depth": 4, "eta": 0.3, "nthread": 1,
              "tree_method": "hist", "seed": 1}
    params.update(extra)
    booster = xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=8)
    path = tmp_path / ("m." + fmt)
    booster.save_model(str(path))
    if fmt == "model" and xgb.__version__.startswith("1."):
        assert open(path, "rb").read(4) == b"binf"
    loaded = xgb.Booster(model_file=str(path))
    m = qs.Model(str(path))
    T = data(n=1500, seed=6)[0]
    dt = xgb.DMatrix(T, nthread=1)
    assert np.array_equal(m.predict(T).astype(np.float32).reshape(len(T), -1),
                          loaded.predict(dt, output_margin=True).reshape(len(T), -1))
    for n in (1, 3, 8):
        want = loaded.predict(dt, output_margin=True, iteration_range=(0, n)).reshape(len(T), -1)
        assert np.array_equal(m.predict(T, trees=n).astype(np.float32).reshape(len(T), -1), want), n

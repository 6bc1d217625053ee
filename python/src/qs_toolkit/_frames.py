"""Data frames as the training libraries read them.

A pandas DataFrame given to ``Model.predict`` becomes a float64 matrix here,
column for column, with each library's own rules:

- column names checked against the feature names the model recorded
  (LightGBM's ``feature_names``, XGBoost's ``feature_names``, CatBoost's
  ``feature_id``): XGBoost and LightGBM (``validate_features=True``) refuse a
  frame whose columns are not the model's in the model's order, naming the
  first that differs; CatBoost takes them by name, in any order;
- category columns become the model's category codes: LightGBM's stored
  ``pandas_categorical`` lists (``set_categories`` then the codes, as
  ``lightgbm.Booster.predict(df)`` does), XGBoost's category encoder of
  3.1+ (the frame's categories re-coded by value; a row holding one not seen
  in training is refused, as XGBoost 3.2 scores it as its first category) or, for an older XGBoost model, the frame's own codes; a code
  of -1 (a missing or unknown category) is NaN;
- bool, integer and nullable columns (``Int64``, ``Float64``, ``boolean``)
  as numbers, ``pd.NA`` as NaN; strings and other objects refused with the
  conversion that works.
"""
import json
from typing import Any, List, Optional

import numpy as np


def _default_names(names: List[str], source: str) -> bool:
    """Whether the names are the ones a library makes up for unnamed
    columns (nothing to check against)."""
    if not names or not any(names):
        return True
    if source == "lightgbm":
        return all(n == "Column_%d" % i for i, n in enumerate(names))
    if source == "xgboost":
        return all(n == "f%d" % i for i, n in enumerate(names))
    if source == "catboost":
        return all(n in ("", str(i)) for i, n in enumerate(names))
    return False


def _mismatch(cols: List[Any], names: List[str]) -> str:
    for i, (c, n) in enumerate(zip(cols, names)):
        if c != n:
            return "column %d of X is %r where the model's feature %d is %r" % (i, c, i, n)
    if len(cols) < len(names):
        return "X lacks the model's feature %d, %r" % (len(cols), names[len(cols)])
    return "X has the extra column %r" % (cols[len(names)],)


def _codes(series: Any, categories: Optional[List[Any]]) -> np.ndarray:
    """The category codes of a category column as float64 (-1: NaN); with
    categories, after set_categories(categories), as LightGBM does."""
    s = series
    if categories is not None:
        s = s.cat.set_categories(categories)
    c = s.cat.codes.to_numpy().astype(np.float64)
    c[c < 0] = np.nan
    return c


def _recode(series: Any, cats: List[str]) -> np.ndarray:
    """XGBoost 3.1+'s re-coding: each value's index in the training
    categories (cats: strings, or numbers written as text), NaN for a value
    not among them or missing."""
    numeric = all(_is_number(t) for t in cats)
    lut = {}
    for code, t in enumerate(cats):
        lut[float(t) if numeric else t] = code
    out = np.full(len(series), np.nan)
    frame_cats = series.cat.categories
    where = np.full(len(frame_cats), np.nan)
    for i, v in enumerate(frame_cats):
        key = _num(v) if numeric else (v if isinstance(v, str) else str(v))
        if key is not None and key in lut:
            where[i] = lut[key]
    codes = series.cat.codes.to_numpy()
    ok = codes >= 0
    out[ok] = where[codes[ok]]
    unseen = ok & np.isnan(out)
    if unseen.any():
        # XGBoost 3.2 scores such a row as its first training category, not
        # as missing: refused rather than scored one way or the other
        v = series.iloc[int(np.argmax(unseen))]
        raise ValueError(
            "column %r holds %r, a category the model was not trained on (its categories: "
            "%s): map it to one of them, or to NaN for a missing value"
            % (series.name, v, ", ".join(repr(t) for t in cats[:8]) +
               (", ..." if len(cats) > 8 else "")))
    return out


def _is_number(t: str) -> bool:
    try:
        float(t)
        return True
    except ValueError:
        return False


def _num(v: Any) -> Optional[float]:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _refuse(c: Any, dt: Any, source: str, pc: Any, enc: Any) -> None:
    hint = "X[%r] = X[%r].astype('category')" % (c, c)
    if source == "lightgbm" and pc:
        hint += " (coded with the model's stored categories)"
    elif source == "xgboost" and enc:
        hint += " (re-coded by the model's category encoder)"
    elif source in ("lightgbm", "xgboost"):
        hint = ("pd.Categorical(X[%r], categories=[...the training categories, in "
                "training order...]) or its codes as numbers" % (c,))
    else:
        hint = "numbers (X[%r].astype('float64'))" % (c,)
    raise TypeError("column %r of X holds %s values, which are not numbers: give %s"
                    % (c, dt, hint))


def frame_matrix(model: Any, X: Any, validate_features: bool = True) -> np.ndarray:
    """X (a pandas DataFrame) as the float64 matrix the model's library
    would score, or ValueError/TypeError saying what to change."""
    import pandas as pd

    source = model.source
    feats = model._features or []
    names = [n for n, _ in feats]
    cols = list(X.columns)
    named = all(isinstance(c, str) for c in cols) and not _default_names(names, source)
    if named and validate_features and cols[:len(names)] != names:
        if source == "catboost" and set(names) <= set(cols) and len(set(names)) == len(names):
            X = X[names]                 # CatBoost takes its features by name
            cols = names
        else:
            rule = {"xgboost": "as XGBoost's predict does",
                    "lightgbm": "as LightGBM's predict(validate_features=True) does",
                    "catboost": "as CatBoost's predict does"}.get(source, "")
            raise ValueError(
                "the columns of X are not the model's features (%s); refused %s: give "
                "X[model.feature_names], or validate_features=False to score by position"
                % (_mismatch(cols, names), rule))
    n = len(X)
    out = np.empty((n, len(cols)), dtype=np.float64, order="F")
    cat_cols = [c for c in cols if isinstance(X[c].dtype, pd.CategoricalDtype)]
    enc = model._categories or {}
    has_pc = source == "lightgbm" and model._pandas_categorical not in (None, "", "null")
    for j, c in enumerate(cols):
        dt = X.iloc[:, j].dtype
        if not (isinstance(dt, pd.CategoricalDtype) or dt == np.bool_ or dt.kind in "iuf" or
                (isinstance(dt, pd.api.extensions.ExtensionDtype) and dt.kind in "iufb")):
            _refuse(c, dt, source, has_pc, enc)
    pc = None
    if source == "lightgbm" and model._pandas_categorical not in (None, "", "null"):
        try:
            pc = json.loads(model._pandas_categorical)
        except ValueError:
            pc = None
        if pc is not None and len(pc) != len(cat_cols):
            raise ValueError(
                "X has %d category column%s (%s), the model was trained on %d (LightGBM's "
                "pandas_categorical): make the categorical features, and only them, pandas "
                "category columns, as in training" % (
                    len(cat_cols), "" if len(cat_cols) == 1 else "s",
                    ", ".join(repr(c) for c in cat_cols) or "none", len(pc)))
    if cat_cols and source not in ("lightgbm", "xgboost"):
        raise TypeError("column %r is a pandas category column: a %s model has no categories "
                        "to code it with; give its values as numbers" % (cat_cols[0], source))
    k = 0
    for j, c in enumerate(cols):
        s = X.iloc[:, j]
        dt = s.dtype
        if isinstance(dt, pd.CategoricalDtype):
            if source == "lightgbm":
                out[:, j] = _codes(s, pc[k] if pc is not None else None)
            elif j in enc:
                out[:, j] = _recode(s, enc[j])
            else:
                out[:, j] = _codes(s, None)
            k += 1
        elif isinstance(dt, pd.api.extensions.ExtensionDtype) and dt.kind in "iufb":
            # nullable Int64, Float64, boolean: pd.NA is missing (NaN)
            out[:, j] = s.to_numpy(dtype=np.float64, na_value=np.nan)
        elif dt == np.bool_ or dt.kind in "iuf":
            out[:, j] = s.to_numpy(dtype=np.float64)
        else:
            _refuse(c, dt, source, pc is not None, enc)
    return out

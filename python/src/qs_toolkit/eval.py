"""Ranking metrics over query groups, as ``qs-eval`` computes them (its
conventions, presets and knobs; the library's qs_eval)."""
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from . import _core

__all__ = ["ndcg", "evaluate"]


def _labels(labels: Any) -> list:
    out = []
    for v in np.asarray(labels).ravel().tolist():
        if isinstance(v, float):
            out.append(repr(v))
        else:
            out.append(str(v))
    return out


def evaluate(labels: Sequence[Any], scores: Any, qids: Optional[Sequence[Any]] = None, *,
             metric: str = "ndcg", k: Union[int, Sequence[int]] = 10,
             preset: Optional[str] = None, per_query: bool = False,
             **knobs: str) -> Any:
    """A metric (``"ndcg"``, ``"err"``, ``"map"``, ``"p"``) at every cutoff k
    (0: the whole list) over the queries: qids[i] is document i's query
    (consecutive runs of one qid form a query, as qs-eval's default
    ``group=block``; ``group="qid"`` gathers every document of a qid), None:
    one query.  ``preset`` (quickrank ranklib lightgbm xgboost xgboost-minus
    trec sklearn rankeval letor) and the knobs (gain, ties, norel, beyond,
    discount, score_type, group) are qs-eval's options.

    Returns the mean (a float for one k, else a list); with per_query=True,
    (mean, [(qid, values, ndocs), ...]).  Raises FormatError for a bad label
    or a NaN score."""
    ks = [k] if isinstance(k, (int, np.integer)) else list(k)
    sc = np.ascontiguousarray(np.asarray(scores, dtype=np.float64).ravel())
    q = None if qids is None else [str(x) for x in np.asarray(qids).ravel().tolist()]
    kn: Dict[str, str] = {name.replace("_", "-"): str(v) for name, v in knobs.items()}
    mean, queries, _desc = _core._eval(_labels(labels), q, sc, metric, [int(x) for x in ks],
                                       preset, kn)
    m = mean[0] if isinstance(k, (int, np.integer)) else mean
    return (m, queries) if per_query else m


def ndcg(labels: Sequence[Any], scores: Any, qids: Optional[Sequence[Any]] = None, *,
         k: Union[int, Sequence[int]] = 10, preset: Optional[str] = None,
         per_query: bool = False, **knobs: str) -> Any:
    """NDCG@k over the queries, with qs-eval's conventions (default: exp2
    gain, log2 discount, ties in input order, a query without relevant
    documents 0); see ``evaluate``."""
    return evaluate(labels, scores, qids, metric="ndcg", k=k, preset=preset,
                    per_query=per_query, **knobs)

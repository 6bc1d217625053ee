#!/usr/bin/python3
"""Reproducible benchmark workloads from the real data of the oracle (build/oracle).

Needs only Debian packages: python3-xgboost python3-numpy python3-scipy zstd.

  # a 20,000-tree, 64-leaf LambdaMART model on MQ2008 + 200,000 resampled docs
  /usr/bin/python3 gen_workload.py --train ../../build/oracle/letor/mq2008/train.txt \\
      --trees 20000 --leaves 64 --docs 200000 --out "$SCRATCH"/wl-mq2008-20k

Writes into --out:
  model.json          XGBoost JSON model (trained on --train, absent = missing)
  docs.txt[.zst]      LETOR text 'rel qid:N idx:val ...': whole queries drawn
                      with replacement from --source (default: --train); each
                      value is kept verbatim with probability --keep, otherwise
                      multiplied by (1 + noise * N(0,1)) and printed with %.6g
  pred.missing.txt    XGBoost raw scores (output_margin) for docs.txt, absent = missing
  pred.dense.txt      same with absent = 0.0 (identical when every feature is present)
  meta.json           arguments, versions, shapes, timings, sha256 of every output

Everything is seeded (--seed; XGBoost seed and nthread are fixed), so the same
command with the same XGBoost version regenerates identical files; compare
meta.json's sha256 values.  Measured on one core (MQ2008 train, 64 leaves):
2,000 trees in 36 s (0.02-0.05 s per tree depending on machine load, so 20,000
trees take 6-20 min); 100,000 docs: resampling 7 s, XGBoost prediction with
2,000 trees 17 s per convention; docs.txt is ~480 bytes per MQ2008 doc (48 MB per
100,000 docs, 5.4 MB with --zstd).  --docs is a minimum: whole queries are copied.
Use --skip-model --model FILE to score new docs with an existing model, or
--docs 0 to make only a model.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import xgboost as xgb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qsref  # noqa: E402


def resample(rows, ndocs, noise, keep, rng):
    groups, start = [], 0
    for s in qsref.group_sizes(rows) or [1] * len(rows):
        groups.append(rows[start:start + s])
        start += s
    out, qid = [], 1
    while len(out) < ndocs:
        g = groups[rng.integers(len(groups))]
        for label, _, feats, _ in g:
            new = []
            for i, v in feats:
                if rng.random() < keep:
                    new.append((i, v))
                else:
                    x = float(v) * (1.0 + noise * rng.standard_normal())
                    new.append((i, '%.6g' % x))
            out.append((label, str(qid), new, None))
        qid += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--train', required=True, help='LETOR training file (.txt or .txt.zst)')
    ap.add_argument('--source', help='LETOR file to resample documents from (default: --train)')
    ap.add_argument('--out', required=True)
    ap.add_argument('--trees', type=int, default=10000)
    ap.add_argument('--leaves', type=int, default=64, help='max_leaves (lossguide); 0 = use --depth')
    ap.add_argument('--depth', type=int, default=0, help='max_depth (0 = unlimited with lossguide)')
    ap.add_argument('--eta', type=float, default=0.02)
    ap.add_argument('--objective', default='rank:ndcg')
    ap.add_argument('--min-child-weight', type=float, default=0.01)
    ap.add_argument('--docs', type=int, default=100000)
    ap.add_argument('--noise', type=float, default=0.01)
    ap.add_argument('--keep', type=float, default=0.5, help='probability that a value is copied verbatim')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--nthread', type=int, default=1)
    ap.add_argument('--pred', choices=['both', 'missing', 'dense', 'none'], default='both')
    ap.add_argument('--zstd', action='store_true', help='compress docs.txt with zstd -19 when over 5 MB')
    ap.add_argument('--skip-model', action='store_true', help='do not train; use --model')
    ap.add_argument('--model', help='existing model.json to score with (with --skip-model)')
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    meta = {'args': vars(a), 'versions': qsref.versions(), 'timings_s': {}}
    rng = np.random.default_rng(a.seed)

    # --- model
    model_path = os.path.join(a.out, 'model.json')
    if a.skip_model:
        if not a.model:
            ap.error('--skip-model needs --model')
        model_path = a.model
    else:
        train = qsref.read_letor(a.train)
        ncol = qsref.max_feature_id(train) + 1
        params = {'objective': a.objective, 'eta': a.eta, 'tree_method': 'hist', 'max_bin': 256,
                  'seed': a.seed, 'nthread': a.nthread, 'min_child_weight': a.min_child_weight}
        if a.leaves > 0:
            params.update({'grow_policy': 'lossguide', 'max_leaves': a.leaves, 'max_depth': a.depth})
        else:
            params.update({'grow_policy': 'depthwise', 'max_depth': a.depth or 6})
        t0 = time.time()
        bst = xgb.train(params, qsref.csr_dmatrix(train, ncol), num_boost_round=a.trees)
        meta['timings_s']['train'] = round(time.time() - t0, 1)
        bst.save_model(model_path)
        meta['params'] = params
        meta['train_docs'] = len(train)
    meta['model_stats'] = qsref.tree_stats(model_path)

    # --- documents
    if a.docs > 0:
        src = qsref.read_letor(a.source or a.train)
        t0 = time.time()
        docs = resample(src, a.docs, a.noise, a.keep, rng)
        docs_path = os.path.join(a.out, 'docs.txt')
        qsref.write_letor(docs_path, docs, True)
        meta['timings_s']['resample'] = round(time.time() - t0, 1)
        meta['docs'] = {'docs': len(docs), 'queries': len(qsref.group_sizes(docs)),
                        'max_feature_id': qsref.max_feature_id(docs),
                        'entries': sum(len(r[2]) for r in docs)}
        if a.pred != 'none':
            bst = xgb.Booster(model_file=model_path)
            bst.set_param({'nthread': a.nthread})
            nfeat = meta['model_stats']['num_feature']
            for conv in (['missing', 'dense'] if a.pred == 'both' else [a.pred]):
                t0 = time.time()
                dm = qsref.csr_dmatrix(docs, nfeat) if conv == 'missing' else qsref.dense_dmatrix(docs, nfeat)
                qsref.write_scores(os.path.join(a.out, 'pred.%s.txt' % conv), bst.predict(dm, output_margin=True))
                meta['timings_s']['predict_' + conv] = round(time.time() - t0, 1)
        if a.zstd:
            qsref.maybe_zstd(docs_path)

    meta['sha256'] = {fn: qsref.sha256(os.path.join(a.out, fn)) for fn in sorted(os.listdir(a.out))
                      if fn != 'meta.json'}
    with open(os.path.join(a.out, 'meta.json'), 'w') as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    print(json.dumps({k: meta[k] for k in ('model_stats', 'timings_s') if k in meta}, indent=1))


if __name__ == '__main__':
    main()

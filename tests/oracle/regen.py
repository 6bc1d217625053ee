#!/usr/bin/env python3
"""regen.py: makes the oracle files of tests/oracle again with the training
libraries themselves, at the versions pinned in requirements.txt (installed
from PyPI into a throw-away virtual environment by `scripts/oracle.sh regen`,
which then compares what this wrote with the checksums of SHA256SUMS and
SHA256SUMS.large).

    python regen.py --data DIR --out DIR NAME...

DIR (--data) is the unpacked oracle (build/oracle: the documents the models
were trained and scored on); NAME is a model folder, e.g.
lightgbm/models/lambdarank_l8_t100, xgboost/mq2008-tiny-d2-t3,
catboost/models/single_tree.  Each library's files are written under --out
in the same layout.  Nothing here reads the network beyond pip's install.

LightGBM: the models were written by the LightGBM command-line program built
from commit bae0b7ba (4.6.0.99); PyPI's lightgbm 4.6.0 trains the same trees
from the same command line (cmd.txt, run through the Python package on the
same LibSVM files) and predicts the same bits.  Two differences of the model
file are not of the trees: the command-line program of that commit lists one
more parameter, `[gpu_device_id_list: ]`, and the Python package appends
`pandas_categorical:null`; both are put back as the program wrote them.

XGBoost: 1.7.4, trained on the train.txt of the data set as parsed here
(float32, absent = missing), seeded, one thread, as the models' info.json
records; the three score files as xgboost/README.md describes them.  The text
dumps of the original data are not kept; info.json is written again but not
compared (it records times and versions).

CatBoost: the models are third-party files (made with the Python catboost
package by another project, catboost/README.md); what this makes again is
CatBoost's own prediction of them on the test rows.

QuickRank has no PyPI package: its models were built from source
(quickrank/README.md, "Provenance") and cannot be made again here.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

SEED = 20240601


# --------------------------------------------------------------------------
# documents
# --------------------------------------------------------------------------
def read_rows(path):
    """LETOR / SVMLight text -> [(label, qid or None, [(id, token)])]."""
    rows = []
    with open(path, encoding='ascii') as f:
        for line in f:
            t = line.split()
            if not t:
                continue
            qid, feats = None, []
            for tok in t[1:]:
                k, v = tok.split(':', 1)
                if k == 'qid':
                    qid = v
                else:
                    feats.append((int(k), v))
            rows.append((t[0], qid, feats))
    return rows


def group_sizes(rows):
    if not rows or rows[0][1] is None:
        return None
    sizes, prev = [], object()
    for r in rows:
        if r[1] != prev:
            sizes.append(0)
            prev = r[1]
        sizes[-1] += 1
    return sizes


# --------------------------------------------------------------------------
# LightGBM
# --------------------------------------------------------------------------
def lightgbm_libsvm(src, dst, with_query):
    """LightGBM's own LibSVM layout: the LETOR line without its qid token,
    and a .query sidecar of group sizes (the rank sets)."""
    rows = read_rows(src)
    with open(dst, 'w', encoding='ascii', newline='\n') as f:
        for r in rows:
            f.write(' '.join([r[0]] + ['%d:%s' % (i, v) for i, v in r[2]]) + '\n')
    if with_query:
        with open(dst + '.query', 'w', encoding='ascii', newline='\n') as f:
            f.write(''.join('%d\n' % s for s in group_sizes(rows)))


def lightgbm_model(data, out, name):
    import lightgbm as lgb
    mdir = os.path.join(data, name)
    with open(os.path.join(mdir, 'cmd.txt')) as f:
        train_cmd, pred_cmd = [l.split() for l in f.read().splitlines() if l.strip()]
    assert train_cmd[0] == 'lightgbm' and 'task=train' in train_cmd, name
    params = dict(kv.split('=', 1) for kv in train_cmd[1:])
    pparams = dict(kv.split('=', 1) for kv in pred_cmd[1:])
    del params['task']
    rounds = int(params.pop('num_iterations'))
    work = tempfile.mkdtemp(prefix='qs-regen-lgb.')
    try:
        os.makedirs(os.path.join(work, 'data'))
        for key in ('data', 'valid_data'):
            rel = params[key]                       # data/<set>.train|test
            base = os.path.basename(rel)
            setname, split = base.rsplit('.', 1)
            src = os.path.join(data, 'lightgbm', 'data', '%s.%s.letor' % (setname, split))
            lightgbm_libsvm(src, os.path.join(work, rel), setname.startswith('rank'))
        cwd = os.getcwd()
        os.chdir(work)
        try:
            train = lgb.Dataset(params['data'], params=params)
            valid = lgb.Dataset(params['valid_data'], params=params, reference=train)
            booster = lgb.train(params, train, num_boost_round=rounds, valid_sets=[valid])
            text = booster.model_to_string()
            suffix = '\npandas_categorical:null\n'
            if text.endswith(suffix):
                text = text[:-len(suffix)]
            if '[gpu_device_id_list: ]' not in text:
                text = text.replace('[gpu_device_id: -1]\n', '[gpu_device_id: -1]\n[gpu_device_id_list: ]\n', 1)
            odir = os.path.join(out, name)
            os.makedirs(odir, exist_ok=True)
            with open(os.path.join(odir, 'model.txt'), 'w', newline='\n') as f:
                f.write(text)
            pred = lgb.Booster(model_file=os.path.join(odir, 'model.txt'))
            raw = pred.predict(pparams['data'], raw_score=True, num_threads=1,
                               precise_float_parser=True)
        finally:
            os.chdir(cwd)
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim == 1:
            raw = raw.reshape(-1, 1)
        with open(os.path.join(out, name, 'pred_raw.txt'), 'w', newline='\n') as f:
            for row in raw:
                f.write('\t'.join('%.17g' % v for v in row) + '\n')
        shutil.copy(os.path.join(mdir, 'cmd.txt'), os.path.join(out, name, 'cmd.txt'))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------
# XGBoost
# --------------------------------------------------------------------------
def csr_dmatrix(rows, ncol):
    """Absent ids -> missing; values parsed here (correctly rounded to float32)."""
    import scipy.sparse as sp
    import xgboost as xgb
    indptr, indices, vals = [0], [], []
    for r in rows:
        last = {}
        for i, v in r[2]:
            if i < ncol:
                last[i] = np.float32(float(v))
        for i in sorted(last):
            indices.append(i)
            vals.append(last[i])
        indptr.append(len(indices))
    m = sp.csr_matrix((np.array(vals, dtype=np.float32), np.array(indices, dtype=np.int64),
                       np.array(indptr, dtype=np.int64)), shape=(len(rows), ncol))
    d = xgb.DMatrix(m, label=np.array([float(r[0]) for r in rows], dtype=np.float32), missing=np.nan)
    g = group_sizes(rows)
    if g is not None:
        d.set_group(g)
    return d


def dense_dmatrix(rows, ncol):
    """Every feature present, absent ids 0.0."""
    import xgboost as xgb
    X = np.zeros((len(rows), ncol), dtype=np.float32)
    for n, r in enumerate(rows):
        for i, v in r[2]:
            if i < ncol:
                X[n, i] = np.float32(float(v))
    d = xgb.DMatrix(X, label=np.array([float(r[0]) for r in rows], dtype=np.float32), missing=np.nan)
    g = group_sizes(rows)
    if g is not None:
        d.set_group(g)
    return d


def write_scores(path, values):
    with open(path, 'w', encoding='ascii', newline='\n') as f:
        for v in values:
            f.write('%.9g\n' % float(np.float32(v)))


def xgboost_model(data, out, name):
    import xgboost as xgb
    with open(os.path.join(data, name, 'info.json')) as f:
        info = json.load(f)
    params = dict(info['params'])
    train_rows = read_rows(os.path.join(data, info['train_file']))
    test_path = os.path.join(data, info['test_file'])
    rows = read_rows(test_path)
    odir = os.path.join(out, name)
    os.makedirs(odir, exist_ok=True)
    ncol = max(i for r in train_rows for i, _ in r[2]) + 1
    bst = xgb.train(params, csr_dmatrix(train_rows, ncol), num_boost_round=info['num_boost_round'])
    model_path = os.path.join(odir, 'model.json')
    bst.save_model(model_path)
    with open(model_path) as f:
        nfeat = int(json.load(f)['learner']['learner_model_param']['num_feature'])
    mats = {'dense': dense_dmatrix(rows, nfeat), 'missing': csr_dmatrix(rows, nfeat),
            'xgbfile': xgb.DMatrix(test_path + '?format=libsvm', silent=True)}
    preds = {}
    for conv, dm in mats.items():
        preds[conv] = bst.predict(dm, output_margin=True)
        write_scores(os.path.join(odir, 'test.pred.%s.txt' % conv), preds[conv])
    if params['objective'] == 'binary:logistic':
        write_scores(os.path.join(odir, 'test.prob.missing.txt'), bst.predict(mats['missing']))
    info['missing_vs_xgbfile'] = {
        'docs_differing': int(np.sum(preds['missing'] != preds['xgbfile'])),
        'max_abs_diff': float(np.max(np.abs(preds['missing'] - preds['xgbfile'])))}
    info['dense_vs_missing'] = {
        'docs_differing': int(np.sum(preds['dense'] != preds['missing'])),
        'max_abs_diff': float(np.max(np.abs(preds['dense'] - preds['missing'])))}
    info['versions'] = {'xgboost': xgb.__version__, 'numpy': np.__version__,
                        'python': sys.version.split()[0]}
    with open(os.path.join(odir, 'info.json'), 'w') as f:
        json.dump(info, f, indent=1, sort_keys=True)


# --------------------------------------------------------------------------
# CatBoost
# --------------------------------------------------------------------------
CATBOOST_TYPES = {'pred_raw.txt': 'RawFormulaVal', 'pred_exponent.txt': 'Exponent',
                  'pred_probability.txt': 'Probability'}


def catboost_model(data, out, name):
    from catboost import CatBoost
    mdir = os.path.join(data, name)
    model = CatBoost()
    model.load_model(os.path.join(mdir, 'model.json'), format='json')
    with open(os.path.join(mdir, 'model.json')) as f:
        nfeat = len(json.load(f)['features_info']['float_features'])
    rows = read_rows(os.path.join(mdir, 'test.letor'))
    X = np.zeros((len(rows), nfeat), dtype=np.float32)
    for n, r in enumerate(rows):
        for i, v in r[2]:
            X[n, i - 1] = np.float32(float(v))
    odir = os.path.join(out, name)
    os.makedirs(odir, exist_ok=True)
    for fn, kind in CATBOOST_TYPES.items():
        if not os.path.exists(os.path.join(mdir, fn)):
            continue
        p = np.asarray(model.predict(X, prediction_type=kind, thread_count=1), dtype=np.float64)
        if p.ndim == 1:
            p = p.reshape(-1, 1)
        with open(os.path.join(odir, fn), 'w', newline='\n') as f:
            for row in p:
                f.write('\t'.join(repr(float(v)) for v in row) + '\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--data', required=True, help='the unpacked oracle (build/oracle)')
    ap.add_argument('--out', required=True, help='where to write')
    ap.add_argument('names', nargs='+', help='model folders, e.g. xgboost/mq2008-tiny-d2-t3')
    a = ap.parse_args()
    for name in a.names:
        name = name.strip('/')
        if name.startswith('lightgbm/models/'):
            lightgbm_model(a.data, a.out, name)
        elif name.startswith('xgboost/'):
            xgboost_model(a.data, a.out, name)
        elif name.startswith('catboost/models/'):
            catboost_model(a.data, a.out, name)
        elif name.startswith('quickrank/'):
            sys.exit('regen.py: %s: QuickRank has no PyPI package; its models were built from '
                     'source (quickrank/README.md, "Provenance")' % name)
        else:
            sys.exit('regen.py: %s: not a model folder (lightgbm/models/NAME, xgboost/NAME, '
                     'catboost/models/NAME)' % name)
        print('regen.py: made %s' % name, flush=True)


if __name__ == '__main__':
    main()

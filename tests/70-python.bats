#!/usr/bin/env bats
# The Python binding (python/, package qs-toolkit, module qs_toolkit): built
# with pip from Debian's packages into this file's scratch folder (nothing
# installed on the system), then its pytest suite (python/tests/) run with
# Debian's python3.  Plain build: every test file, the oracle files
# included.  Sanitizer pass (SANITIZE set, bin/ on build-san): the extension
# built against build-san's library with the same -fsanitize flags, and the
# API and bad-input tests and one oracle file per kind of model run with
# AddressSanitizer preloaded (leak checks off: the interpreter keeps its own
# memory to the end).

load test_helper

# QS_PYTHON: another interpreter (a venv with --system-site-packages that
# adds pyspark, say); default Debian's
PY=${QS_PYTHON:-/usr/bin/python3}

setup_file() {
    export QS_PY_SITE="$BATS_FILE_TMPDIR/site"
}

# which build bin/ runs: build or build-san
build_dir() {
    local t
    t=$(readlink "$QS_ROOT/bin/qs-score") || return 1
    t=${t#../}
    printf '%s\n' "$QS_ROOT/${t%%/bin/qs-score}"
}

need_python() {
    [ -x "$PY" ] || skip "no $PY (Debian's python3)"
    local m
    for m in numpy scipy pytest setuptools pip; do
        "$PY" -c "import $m" 2> /dev/null ||
            skip "$PY lacks $m (Debian: python3-$m; scripts/setup.sh test installs it)"
    done
    [ -f /usr/include/python3*/Python.h ] 2> /dev/null || ls /usr/include/python3*/Python.h > /dev/null 2>&1 ||
        skip "no Python.h (Debian: python3-dev)"
}

# build the binding once per file: pip from a copy of python/ (so that the
# checkout gets no build folder), against the build bin/ runs
build_binding() {
    [ -f "$QS_PY_SITE/.ok" ] && return 0
    local b src="$BATS_FILE_TMPDIR/src" san=""
    if [ -n "${SANITIZE:-}" ]; then
        b="$QS_ROOT/build-san" san="$SANITIZE"
        [ -f "$b/libqs.a" ] || { echo "no $b/libqs.a (make lib SANITIZE=$SANITIZE)"; return 1; }
    else
        b=$(build_dir) || { echo "cannot tell which build bin/ runs"; return 1; }
    fi
    rm -rf "$src" "$QS_PY_SITE"
    cp -r "$QS_ROOT/python" "$src"
    rm -rf "$src/build" "$src"/src/*.egg-info
    QS_SOURCE_DIR="$QS_ROOT" QS_BUILD_DIR="$b" QS_SANITIZE="$san" PIP_NO_INDEX=1 \
        "$PY" -m pip install -v --no-build-isolation --no-deps --no-cache-dir \
        --target "$QS_PY_SITE" "$src" > "$BATS_FILE_TMPDIR/pip.log" 2>&1 ||
        { echo "pip install failed:"; tail -n 30 "$BATS_FILE_TMPDIR/pip.log"; return 1; }
    touch "$QS_PY_SITE/.ok"
}

# py ARGS...: the interpreter with the built package first (and, in the
# sanitizer pass, AddressSanitizer's runtime preloaded: it must come first);
# its temporary files in the test's own folder, which bats removes (pytest's
# tmp_path would otherwise stay in /tmp/pytest-of-USER, Dask's worker space
# in /tmp/dask-worker-space, Spark's in /tmp/spark-*)
py() {
    mkdir -p "$BATS_TEST_TMPDIR/tmp"
    local pre=()
    if [ -n "${SANITIZE:-}" ]; then
        case ",$SANITIZE," in
        *,address,*) pre=(env LD_PRELOAD="$(gcc -print-file-name=libasan.so)"
                          ASAN_OPTIONS="exitcode=86:detect_leaks=0") ;;
        esac
    fi
    TMPDIR="$BATS_TEST_TMPDIR/tmp" PYTHONPATH="$QS_PY_SITE:$QS_ROOT/python/tests" PYTHONDONTWRITEBYTECODE=1 \
        "${pre[@]}" "$PY" "$@"
}

# pytest ARGS...: the binding's tests
pytest_run() {
    cd "$QS_ROOT/python/tests"
    py -m pytest -q -p no:cacheprovider -p no:logging -rs "$@"
}

@test "python: pip install builds the binding from Debian's packages without the network" {
    need_python
    build_binding
    run py -c 'import qs_toolkit as qs; print(qs.__version__, qs.build_info()["auto"])'
    assert_success
    assert_output --partial "$(sed -n 's/^#define QS_VERSION_STRING "\(.*\)"/\1/p' "$QS_ROOT/include/qs.h")"
    if [ -n "${SANITIZE:-}" ]; then
        # the sanitizer pass: the extension itself is instrumented
        ldd "$QS_PY_SITE"/qs_toolkit/_core*.so | grep -q libasan ||
            { echo "the extension is not built with AddressSanitizer"; return 1; }
    fi
    # the extension was compiled here, without a compiler warning
    local f
    for f in "$QS_ROOT"/python/src/qs_toolkit/c-ext/*.c; do
        grep -q "src/qs_toolkit/c-ext/${f##*/}" "$BATS_FILE_TMPDIR/pip.log" ||
            { echo "pip.log shows no compilation of c-ext/${f##*/}"; return 1; }
    done
    run grep -E "c-ext/[a-z_]+\.[ch]:[0-9]+:[0-9]+: warning" "$BATS_FILE_TMPDIR/pip.log"
    assert_failure
}

@test "python: outside a checkout the binding builds against the installed libqs (pkg-config qs)" {
    need_python
    [ -z "${SANITIZE:-}" ] || skip "plain pass only"
    local T="$BATS_TEST_TMPDIR"
    make -s -C "$QS_ROOT" install PREFIX="$T/inst" > /dev/null
    mkdir "$T/elsewhere"
    cp -r "$QS_ROOT/python" "$T/elsewhere/python"
    rm -rf "$T/elsewhere/python/build"
    (cd "$T" && env -u QS_BUILD_DIR -u QS_SOURCE_DIR PKG_CONFIG_PATH="$T/inst/lib/pkgconfig" \
        PIP_NO_INDEX=1 "$PY" -m pip install -v --no-build-isolation --no-deps --no-cache-dir \
        --target "$T/site" "$T/elsewhere/python" > "$T/pip.log" 2>&1) ||
        { echo "pip install failed:"; tail -n 30 "$T/pip.log"; return 1; }
    # linked with the installed libqs.so (found through its rpath), not a copy
    ldd "$T"/site/qs_toolkit/_core*.so | grep -q "libqs.so.0 => $T/inst/lib/" ||
        { ldd "$T"/site/qs_toolkit/_core*.so; return 1; }
    qs-compile -o "$T/m.qsm" "$FIX/lgb-l8/model.txt.zst"
    run env PYTHONPATH="$T/site" "$PY" -c "
import numpy as np, qs_toolkit as qs
m = qs.Model('$FIX/lgb-l8/model.txt.zst')
print('%.17g' % m.predict(np.zeros((1, m.num_features)))[0])"
    assert_success
    assert_output "$(printf '0 qid:1\n' | qs-score "$T/m.qsm")"
}

@test "python: API, layouts, threads, trees, leaves, info, back ends, eval, GIL (test_api.py)" {
    need_python
    build_binding
    run pytest_run test_api.py
    echo "$output" | tail -n 30
    assert_success
}

@test "python: bad input gives clear exceptions, no crash (test_errors.py)" {
    need_python
    build_binding
    run pytest_run test_errors.py
    echo "$output" | tail -n 30
    assert_success
}

@test "python: every oracle file, dense and CSR, every back end: qs-score's bytes (test_oracles.py)" {
    need_python
    require_oracle
    build_binding
    local want passed=0 skipped=0 large=yes name
    while read -r _ name; do
        [ -f "$ORACLE/$name" ] || large=""
    done < "$QS_ROOT/tests/oracle/SHA256SUMS.large"
    if [ -n "${SANITIZE:-}" ]; then
        # the sanitizer pass: one oracle per kind of model (the plain pass runs them all)
        run pytest_run test_oracles.py -k "binary_l31_t200 or mq2008-tiny or single_tree or qr_oblivious_d3_t100 or multiclass_k5 or lineartree or nan_nantype or multiclass_5"
        want=8
    else
        run pytest_run test_oracles.py
        # the list's own test and 78 oracle files: 66 of tests/oracle, 12 of
        # the models scripts/oracle.sh large makes (skipped until then)
        want=79
    fi
    echo "$output" | tail -n 30
    assert_success
    [[ "$output" =~ ([0-9]+)\ passed ]] && passed=${BASH_REMATCH[1]}
    [[ "$output" =~ ([0-9]+)\ skipped ]] && skipped=${BASH_REMATCH[1]}
    [ $((passed + skipped)) -ge "$want" ] ||
        { echo "$passed passed and $skipped skipped: fewer oracle tests than the $want expected"; return 1; }
    # a skip only for a large model not made yet, and none once they are
    if [ "$skipped" != 0 ]; then
        [ -z "$large" ] || { echo "$skipped skipped with every large model present"; return 1; }
        local other
        other=$(grep -E '^SKIPPED' <<< "$output" | grep -vc 'scripts/oracle.sh large makes it' || true)
        [ "$other" = 0 ] || { echo "$other skips for another reason than a large model not made"; return 1; }
    fi
}

# py_sweep NAME KIND EXPECTED ARGS...: tests/faults/sweep.sh over the
# binding (tests/faults/binding.py ARGS), its allocations (those of _core and
# libqs in it, and of the libraries they call) or its reads failed one at a
# time, every QS_PY_FAULT_STEP-th point (default 29: each point starts an
# interpreter; 1 takes every one)
py_sweep() {
    local name="$1" kind="$2" want="$3" pre=""
    shift 3
    # every 29th point; the sanitizer pass every 58th (an interpreter
    # with AddressSanitizer preloaded starts slowly; the plain pass runs
    # the denser sample)
    local step=29
    if [ -n "${SANITIZE:-}" ]; then
        step=58
        case ",$SANITIZE," in
        *,address,*) pre=$(gcc -print-file-name=libasan.so) ;;
        esac
    fi
    run env PYTHONPATH="$QS_PY_SITE" PYTHONDONTWRITEBYTECODE=1 QS_FAULT_PRELOAD="$pre" \
        ASAN_OPTIONS="exitcode=86:detect_leaks=0" \
        "$QS_ROOT/tests/faults/sweep.sh" -k "$kind" -s "${QS_PY_FAULT_STEP:-$step}" "$name" "$want" -- \
        env QS_FAULT_OBJECT=_core. "$PY" "$QS_ROOT/tests/faults/binding.py" "$@"
    printf '%s\n' "$output"
    assert_success
    assert_output --regexp "sweep $name: [0-9]+ points \($kind\), [0-9]+ run: [0-9]+ exit 0 with the same output, [1-9][0-9]* exit 4, 0 failed"
}

@test "python: faults in the binding's load and predict paths, one at a time (allocations, reads): the same output or MemoryError/OSError, never a crash" {
    need_python
    build_binding
    [ -f "$UNIT/libqsfault.so" ] || skip "no fault injector ($UNIT/libqsfault.so): make"
    local T="$BATS_TEST_TMPDIR" m
    head -n 20 "$FIX/xgb-tiny/docs.letor" > "$T/docs"
    head -n 12 "$FIX/lgb-l8/docs.letor" > "$T/lgb.docs"
    qs-compile -o "$T/m.qsm" "$FIX/lgb-l8/model.txt.zst"
    qs-compile -o "$T/x.qsm" "$FIX/xgb-tiny/model.json"
    # what each run must print without a fault
    for m in xgb lgb qsm xqsm; do
        case $m in
        xgb) set -- "$FIX/xgb-tiny/model.json" "$T/docs" predict ;;
        lgb) set -- "$FIX/lgb-l8/model.txt.zst" "$T/lgb.docs" predict ;;
        qsm) set -- "$T/m.qsm" "$T/lgb.docs" load ;;
        xqsm) set -- "$T/x.qsm" "$T/docs" predict ;;
        esac
        py "$QS_ROOT/tests/faults/binding.py" "$@" > "$T/$m.want"
    done
    py_sweep py-xgb-json alloc "$T/xgb.want" "$FIX/xgb-tiny/model.json" "$T/docs" predict
    py_sweep py-lgb-zstd alloc "$T/lgb.want" "$FIX/lgb-l8/model.txt.zst" "$T/lgb.docs" predict
    py_sweep py-qsm alloc "$T/qsm.want" "$T/m.qsm" "$T/lgb.docs" load
    py_sweep py-read-qsm read "$T/xqsm.want" "$T/x.qsm" "$T/docs" predict
}

# pypi_venv: a venv with PyPI's lightgbm, xgboost (xgboost-cpu) and catboost
# beside Debian's packages (--system-site-packages), made once per checkout
# in build/py-venv (QS_PY_VENV: another folder), and the binding built into
# it; skips, saying so, where PyPI cannot be reached (no network)
pypi_venv() {
    local v="${QS_PY_VENV:-$QS_ROOT/build/py-venv}" src="$BATS_FILE_TMPDIR/vsrc" b
    if [ ! -f "$v/.ok" ]; then
        rm -rf "$v"
        /usr/bin/python3 -m venv --system-site-packages "$v" > /dev/null 2>&1 ||
            skip "python3 -m venv failed (Debian: python3-venv)"
        timeout 900 "$v/bin/pip" install --quiet --disable-pip-version-check --timeout 30 \
            lightgbm xgboost-cpu catboost > "$BATS_FILE_TMPDIR/venv.log" 2>&1 || {
            rm -rf "$v"
            skip "cannot install lightgbm, xgboost-cpu and catboost from PyPI (no network?): $(tail -n 1 "$BATS_FILE_TMPDIR/venv.log")"
        }
        touch "$v/.ok"
    fi
    VPY="$v/bin/python"
    VSITE="$BATS_FILE_TMPDIR/vsite"
    [ -f "$VSITE/.ok" ] && return 0
    b=$(build_dir) || { echo "cannot tell which build bin/ runs"; return 1; }
    rm -rf "$src" "$VSITE"
    cp -r "$QS_ROOT/python" "$src"
    rm -rf "$src/build" "$src"/src/*.egg-info
    QS_SOURCE_DIR="$QS_ROOT" QS_BUILD_DIR="$b" PIP_NO_INDEX=1 "$VPY" -m pip install -v \
        --no-build-isolation --no-deps --no-cache-dir --target "$VSITE" "$src" \
        > "$BATS_FILE_TMPDIR/vpip.log" 2>&1 ||
        { echo "pip install into the venv failed:"; tail -n 30 "$BATS_FILE_TMPDIR/vpip.log"; return 1; }
    touch "$VSITE/.ok"
}

@test "python: data frames (categories, names, nullable, strings), CatBoost's (n, F), predict's arguments against PyPI's lightgbm, xgboost, catboost (test_frames.py)" {
    need_python
    [ -z "${SANITIZE:-}" ] || skip "plain pass only"
    pypi_venv
    cd "$QS_ROOT/python/tests"
    mkdir -p "$BATS_TEST_TMPDIR/tmp"
    run env TMPDIR="$BATS_TEST_TMPDIR/tmp" PYTHONPATH="$VSITE:$QS_ROOT/python/tests" PYTHONDONTWRITEBYTECODE=1 \
        "$VPY" -m pytest -q -p no:cacheprovider -p no:logging -rs test_frames.py
    echo "$output" | tail -n 30
    assert_success
    assert_output --partial "5 passed"
}

@test "python: live against XGBoost's own predict (test_xgboost_live.py; needs python3-xgboost)" {
    need_python
    [ -z "${SANITIZE:-}" ] || skip "plain pass only"
    "$PY" -c 'import xgboost' 2> /dev/null || skip "python3-xgboost is not installed"
    build_binding
    run pytest_run test_xgboost_live.py
    echo "$output" | tail -n 30
    assert_success
}

@test "python: Dask map_partitions on a LocalCluster of 2 workers (needs python3-dask, python3-distributed, python3-pandas)" {
    need_python
    [ -z "${SANITIZE:-}" ] || skip "plain pass only"
    local m
    for m in dask distributed pandas; do
        "$PY" -c "import $m" 2> /dev/null || skip "python3-$m is not installed"
    done
    build_binding
    run pytest_run test_scale.py -k dask
    echo "$output" | tail -n 30
    assert_success
    assert_output --partial "1 passed"
}

@test "python: a Spark batch's scores joined in one step, without pandas' fragmentation warning (needs python3-pandas only)" {
    need_python
    [ -z "${SANITIZE:-}" ] || skip "plain pass only"
    "$PY" -c "import pandas" 2> /dev/null || skip "python3-pandas is not installed"
    build_binding
    run pytest_run test_scale.py -k joined
    echo "$output" | tail -n 30
    assert_success
    assert_output --partial "1 passed"
}

@test "python: Spark mapInPandas in local mode (where pyspark is importable)" {
    need_python
    [ -z "${SANITIZE:-}" ] || skip "plain pass only"
    "$PY" -c 'import pyspark, pyarrow' 2> /dev/null ||
        skip "pyspark and pyarrow are not importable by $PY (PyPI only; the README's Spark recipe says how to try it)"
    build_binding
    run pytest_run test_scale.py -k spark
    echo "$output" | tail -n 30
    assert_success
    assert_output --partial "1 passed"
}

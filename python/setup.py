"""Build qs_toolkit._core against libqs.

Where the library comes from, in this order:
  QS_BUILD_DIR=DIR   a qs build folder (build/, build-san/): DIR/libqs.a,
                     linked statically, and the checkout's include/qs.h
                     (QS_SOURCE_DIR=DIR names the checkout when this folder
                     was copied elsewhere)
  the checkout this folder sits in (../include/qs.h): its build/libqs.a,
                     brought up to date first with `make lib` (a stale one
                     is rebuilt, never linked)
  libqs/ beside this file (an sdist made by make wheel): its sources,
                     built with `make lib` (QS_HAVE_CUDA=0: without CUDA)
  pkg-config qs      the installed library (make install)
A sanitizer build (DIR named build-san, or QS_SANITIZE=address,undefined)
compiles and links the extension with the same -fsanitize flags.
"""
import os
import shlex
import shutil
import subprocess
import sys

import numpy
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out.stdout)


def from_build(root, build):
    lib = os.path.join(build, "libqs.a")
    if os.path.exists(os.path.join(root, "Makefile")) and \
            os.path.basename(build.rstrip("/")) == "build":
        # always through make: a library older than its sources is rebuilt
        # (make does nothing when it is up to date), never linked stale
        print("qs_toolkit: make lib in %s" % root, file=sys.stderr)
        cuda = os.environ.get("QS_HAVE_CUDA") or ("0" if root == os.path.join(HERE, "libqs")
                                                  else None)
        subprocess.run(["make", "-s", "-C", root, "lib"] +
                       (["HAVE_CUDA=" + cuda] if cuda else []), check=True)
    if not os.path.exists(lib):
        sys.exit("qs_toolkit: %s not found: build the library first (make lib)" % lib)
    with open(lib, "rb") as f:
        blob = f.read()
    libs = ["zstd", "expat", "protobuf-c", "m"]
    link = []
    pc = pkg_config("--libs", "libprotobuf-c")
    if pc:
        libs.remove("protobuf-c")
        link += pc
    if b"GOMP_parallel" in blob:
        link.append("-fopenmp")
    if b"cudaLaunchKernel" in blob or b"cudaMalloc" in blob:
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        home = os.path.dirname(os.path.dirname(nvcc))
        link += ["-L" + os.path.join(home, "lib64"), "-lcudart_static", "-lstdc++", "-ldl",
                 "-lrt", "-lpthread"]
    return [os.path.join(root, "include")], [lib], libs, link


def library():
    build = os.environ.get("QS_BUILD_DIR")
    root = os.environ.get("QS_SOURCE_DIR") or os.path.dirname(HERE)
    have_checkout = os.path.exists(os.path.join(root, "include", "qs.h"))
    if build:
        if not have_checkout:
            sys.exit("qs_toolkit: QS_BUILD_DIR is set but %s has no include/qs.h "
                     "(set QS_SOURCE_DIR to the checkout)" % root)
        return from_build(root, os.path.abspath(build))
    if have_checkout:
        return from_build(root, os.path.join(root, "build"))
    bundled = os.path.join(HERE, "libqs")
    if os.path.exists(os.path.join(bundled, "include", "qs.h")):
        # an sdist (make wheel): the library's sources are inside it
        return from_build(bundled, os.path.join(bundled, "build"))
    cflags = pkg_config("--cflags", "qs")
    libs = pkg_config("--libs", "qs")
    if libs is None:
        sys.exit("qs_toolkit: no qs checkout beside this folder and no installed libqs "
                 "(pkg-config qs): build it from the qs checkout")
    libdir = pkg_config("--variable=libdir", "qs")
    rpath = ["-Wl,-rpath," + libdir[0]] if libdir else []   # a prefix outside the loader's path
    return [f[2:] for f in cflags if f.startswith("-I")], [], ["zstd"], libs + rpath


# Making an sdist (or its metadata) needs no library: only a build does
_meta_only = any(a in sys.argv for a in ("sdist", "egg_info", "dist_info")) and \
    not any(a in sys.argv for a in ("build_ext", "bdist_wheel", "install", "develop",
                                    "editable_wheel"))
inc, objects, libs, link = ([], [], [], []) if _meta_only else library()
san = os.environ.get("QS_SANITIZE") or (
    "address,undefined" if os.path.basename(os.environ.get("QS_BUILD_DIR", "").rstrip("/"))
    == "build-san" else "")
cflags = ["-std=c11", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes",
          "-Wno-unused-parameter", "-Wno-missing-field-initializers"]
if san:
    # a report ends the run, as in the library's sanitizer build (a test
    # cannot pass over a misaligned load or an overflow)
    cflags += ["-fsanitize=" + san, "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"]
    link = ["-fsanitize=" + san] + link
link.append("-Wl,--exclude-libs,ALL")

setup(
    ext_modules=[Extension(
        "qs_toolkit._core",
        sources=["src/qs_toolkit/c-ext/" + f for f in
                 ("errors.c", "buffers.c", "model.c", "predict.c", "module.c")],
        depends=["src/qs_toolkit/c-ext/core.h", "src/qs_toolkit/args.h"],
        include_dirs=inc + [numpy.get_include()],
        extra_objects=objects,
        libraries=libs,
        extra_compile_args=cflags,
        extra_link_args=link,
    )],
)

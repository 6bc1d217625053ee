# Makefile for qs, the QuickScorer toolkit.  Non-recursive.  `make help` lists
# the targets; the knobs below can be set on the command line.
#
#   CC=cc            C compiler (gcc or clang)
#   CFLAGS=...       extra flags (the defaults keep -O2, no -march=native)
#   CPPFLAGS=...     extra preprocessor flags (Debian's -D_FORTIFY_SOURCE=2)
#   PREFIX=/usr/local DESTDIR=   install location (MANDIR=$(PREFIX)/share/man,
#                    DOCDIR=$(PREFIX)/share/doc/qs: the format specifications)
#   HAVE_OPENMP=auto|0|1  HAVE_NUMA=auto|0|1  HAVE_CUDA=auto|0|1
#   SANITIZE=address,undefined   build with sanitizers (separate build dir)
#   READERS=0        the library without the model readers (make lib): the
#                    scoring half of qs.h, no libexpat or protobuf-c
#                    (build-scoring/)
#   V=1              show full command lines

CC      ?= cc
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
PKGDIR  ?= $(LIBDIR)/pkgconfig
MANDIR  ?= $(PREFIX)/share/man
DOCDIR  ?= $(PREFIX)/share/doc/qs
HAVE_OPENMP ?= auto
HAVE_NUMA   ?= auto
HAVE_CUDA   ?= auto
SANITIZE    ?=
NVCC        ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) $(shell command -v nvcc 2>/dev/null))

ifeq ($(V),1)
Q :=
else
Q := @
endif

READERS ?= 1
BUILD := build$(if $(SANITIZE),-san)$(if $(filter 0,$(READERS)),-scoring)
OPT   ?= -O2
WARN  := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE $(OPT) -g $(WARN) -Iinclude -fPIC
# Include paths by part: the library (and the unit tests and fuzz targets,
# which test its insides) sees lib/ and the generated headers; the tools see
# qs.h and tools/common/ only, so that "tools use only qs.h" is checked by
# the compiler.
LIB_INC  := -Ilib -I$(BUILD)/gen
TOOL_INC := -Itools/common
ifneq ($(SANITIZE),)
BASE_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDSAN := -fsanitize=$(SANITIZE)
endif

# ------------------------------------------------------------ detection
# Each probe compiles a tiny program; results are printed once per build.
HASH := \#
probe = $(shell printf '%s\n' $(1) | $(CC) -x c - -o /dev/null $(2) >/dev/null 2>&1 && echo 1 || echo 0)

ifeq ($(HAVE_OPENMP),auto)
HAVE_OPENMP := $(call probe,'$(HASH)include <omp.h>' 'int main(void){return omp_get_max_threads()<0;}',-fopenmp)
endif
ifeq ($(HAVE_NUMA),auto)
HAVE_NUMA := $(call probe,'$(HASH)include <numa.h>' 'int main(void){return numa_available();}',-lnuma)
endif
# CUDA: nvcc found and a one-line kernel compiles for every target
# (scripts/probe-cuda.sh, its answer cached per nvcc and targets), so an
# nvcc too old for them gives "no CUDA", not a broken build.
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
CUDA_ASKED := $(HAVE_CUDA)
ifeq ($(HAVE_CUDA),auto)
HAVE_CUDA := $(if $(NVCC),$(shell scripts/probe-cuda.sh '$(NVCC)' '$(BUILD)' $(CUDA_ARCH)),0)
endif
CUDA_WHY := $(if $(filter 1,$(HAVE_CUDA)), (nvcc $(NVCC); targets: $(filter arch=%,$(CUDA_ARCH))),$(if $(filter 0,$(CUDA_ASKED)), (HAVE_CUDA=0),$(if $(NVCC), (nvcc cannot build for the targets), (no nvcc))))
HAVE_ZSTD := $(call probe,'$(HASH)include <zstd.h>' 'int main(void){return (int)ZSTD_versionNumber()<0;}',-lzstd)

FEATURE_DEFS := -DQS_HAVE_OPENMP=$(HAVE_OPENMP) -DQS_HAVE_NUMA=$(HAVE_NUMA) -DQS_HAVE_CUDA=$(HAVE_CUDA)
# protobuf-c (the ONNX reader): its library and protoc-c, which generates the
# parser from lib/convert/onnx.proto into $(BUILD)/gen at build time.
PROTOC_C ?= protoc-c
PROTOBUF_C_CFLAGS := $(shell pkg-config --cflags libprotobuf-c 2>/dev/null)
PROTOBUF_C_LIBS := $(or $(shell pkg-config --libs libprotobuf-c 2>/dev/null),-lprotobuf-c)
ifeq ($(READERS),0)
LIBS := -lzstd -lm
FEATURE_DEFS += -DQS_HAVE_READERS=0
else
LIBS := -lzstd -lexpat $(PROTOBUF_C_LIBS) -lm
FEATURE_DEFS += -DQS_HAVE_READERS=1
endif
# OpenMP: the threaded paths (qs-score --threads, qs_score_matrix).
ifeq ($(HAVE_OPENMP),1)
FEATURE_DEFS += -fopenmp
endif
# CUDA: the kernels (lib/score/cuda/kernels.cu) with nvcc; the runtime
# linked statically, so a binary needs only the driver.  Exact arithmetic:
# no contraction into FMA, no flush to zero, IEEE division and square root.
# ptxas reports registers, spills and local memory per target into
# $(BUILD)/cuda/ptxas.log, and a spill or local memory fails the build; the
# SASS gates (scripts/check-sass.sh: no compare-and-swap loop for a shared
# atomic, no generic atomic or address-space test) fail it too, when
# cuobjdump is at hand (scripts/sass-tools.sh), into $(BUILD)/cuda/sass.log.
CUDA_HOME := $(patsubst %/bin/nvcc,%,$(NVCC))
NVCC_FLAGS := -std=c++17 -O3 --fmad=false -ftz=false -prec-div=true -prec-sqrt=true \
              -Xcompiler -fPIC,-fvisibility=hidden -Xptxas -v,-warn-spills,-warn-lmem-usage \
              -Werror all-warnings -Iinclude -Ilib -DQS_HAVE_CUDA=1 $(CUDA_ARCH)
ifeq ($(HAVE_CUDA),1)
LIB_CU := lib/score/cuda/kernels.cu
LIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -lstdc++ -ldl -lrt -lpthread
endif
# libnuma: one model replica per NUMA node in qs-score.
ifeq ($(HAVE_NUMA),1)
TOOL_LIBS := -lnuma
endif

ALL_CFLAGS = $(BASE_CFLAGS) $(FEATURE_DEFS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(LDSAN) $(LDFLAGS)

# ------------------------------------------------------------ sources
LIB_SRC  :=
include lib/lib.mk
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(LIB_GEN:%=$(BUILD)/gen/%.o) $(LIB_CU:%.cu=$(BUILD)/%.o)
# The shared library exports the public API (QS_API in qs.h) and nothing else.
SOVERSION := 0
LIB_VERSION := $(shell sed -n 's/^\#define QS_VERSION_STRING "\(.*\)"/\1/p' include/qs.h)
SHARED_LIB := $(BUILD)/libqs.so.$(LIB_VERSION)
TOOL_COMMON_SRC := $(wildcard tools/common/*.c)
TOOL_COMMON_OBJ := $(TOOL_COMMON_SRC:%.c=$(BUILD)/%.o)
TOOLS    := qs-convert qs-compile qs-score qs-eval qs-blocktune
# The file formats' specifications, installed with the docs (DOCDIR).
FORMAT_DOCS := $(wildcard format/*.md)
TOOL_BIN := $(TOOLS:%=$(BUILD)/bin/%)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
STATIC_LIB := $(BUILD)/libqs.a
FAULT_SO := $(BUILD)/tests/libqsfault.so
# The GPU-QS emulator test built three more times, each with one mutation
# of the kernel's logic or tables (lib/score/cuda/phases.h,
# QS_CU_MUTATION), to show that the test fails for each
# (tests/27-cuda.bats).
CUDA_C_SRC := lib/score/cuda/driver.c lib/score/cuda/tables.c lib/score/cuda/emu.c
MUTANTS := 1 2 3
UNIT_BIN += $(MUTANTS:%=$(BUILD)/tests/test_cuda_emu_mut%)
# bench/parse: the LETOR reader alone, in MB/s; bench/qs-matrix: the dense-matrix
# view of bench/peers.py (bench/README.md).  Built with everything else so
# that they keep compiling, but not installed.
BENCH_BIN := $(BUILD)/bench/parse $(BUILD)/bench/qs-matrix $(BUILD)/bench/cuda-kernel
# bench/cuda-atomics and bench/cuda-host: CUDA programs of their own (shared
# atomics in cycles; a process's fixed costs and copies), for the device
# run's diagnosis (scripts/gpu-run.sh); with nvcc only.
ifeq ($(HAVE_CUDA),1)
BENCH_BIN += $(BUILD)/bench/cuda-atomics $(BUILD)/bench/cuda-host
endif

include fuzz/fuzz.mk

.PHONY: all lib check check-all check-faults check-unit demo install uninstall clean help features oracle
ifeq ($(READERS),0)
all:
	@echo "make READERS=0 builds the library only (the tools and tests need the readers): make READERS=0 lib" >&2; exit 2
else
all: features $(TOOL_BIN) $(UNIT_BIN) $(FAULT_SO) $(FUZZ_REPLAY_BIN) $(BENCH_BIN) $(SHARED_LIB) bin-links oracle
endif

# The oracle data of the conformance tests: tests/oracle (the models,
# documents and the training libraries' own predictions, zstd-compressed)
# unpacked into build/oracle and checked against its checksums
# (scripts/oracle.sh; the zstd program).  The larger models left out of the
# repository: scripts/oracle.sh large.
ORACLE_SRC := $(shell find tests/oracle -type f 2> /dev/null)
oracle: build/oracle/.unpacked
build/oracle/.unpacked: $(ORACLE_SRC) scripts/oracle.sh
	@echo "  ORACLE  build/oracle"
	$(Q)./scripts/oracle.sh unpack build/oracle
	@touch $@

# The library alone: libqs.a and libqs.so in $(BUILD)/ (with READERS=0, in
# build-scoring/: no model readers, no libexpat or protobuf-c).
lib: $(STATIC_LIB) $(SHARED_LIB)
	@echo "qs build: $(STATIC_LIB) $(SHARED_LIB)$(if $(filter 0,$(READERS)), (without the model readers))"

features:
	@echo "qs build: CC=$(CC) zstd=$(HAVE_ZSTD) openmp=$(HAVE_OPENMP) numa=$(HAVE_NUMA) cuda=$(HAVE_CUDA)$(CUDA_WHY)$(if $(SANITIZE), sanitize=$(SANITIZE))"
ifneq ($(HAVE_ZSTD),1)
	@echo "qs build: libzstd (zstd.h, -lzstd) is required: apt-get install libzstd-dev" >&2; exit 1
endif
	@command -v $(PROTOC_C) >/dev/null 2>&1 || { echo "qs build: protoc-c is required: apt-get install protobuf-c-compiler libprotobuf-c-dev" >&2; exit 1; }

# Rebuild everything when the flags change.
$(BUILD)/.flags: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS)' > $@
.PHONY: FORCE
FORCE:
.SECONDARY:

$(BUILD)/tools/%.o $(BUILD)/bench/%.o: INC := $(TOOL_INC)
$(BUILD)/tests/%.o $(BUILD)/fuzz/%.o: INC := $(LIB_INC) $(TOOL_INC)
# bench/cuda-kernel times the GPU-QS kernel through the library's internals,
# as the unit tests do.
$(BUILD)/bench/cuda_kernel.o: INC := $(LIB_INC) $(TOOL_INC)
$(BUILD)/%.o: %.c $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(INC) -MMD -MP -c $< -o $@

# Generated protobuf-c parsers: lib/X.proto -> $(BUILD)/gen/X.pb-c.{c,h},
# included as "X.pb-c.h" (e.g. "convert/onnx.pb-c.h").
$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: lib/%.proto
	@mkdir -p $(BUILD)/gen
	$(if $(Q),@echo "  PROTOC  $<")
	$(Q)$(PROTOC_C) --proto_path=lib --c_out=$(BUILD)/gen $<

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_INC) $(PROTOBUF_C_CFLAGS) -fvisibility=hidden -MMD -MP -c $< -o $@

# Sources that include a generated header wait for it.
$(LIB_GEN_USERS:%.c=$(BUILD)/%.o): $(LIB_GEN:%=$(BUILD)/gen/%.h)

# The CUDA kernels: nvcc, hidden symbols, ptxas's report kept.
$(BUILD)/lib/%.o: lib/%.cu lib/score/cuda/phases.h lib/score/cuda/device.h $(BUILD)/.flags
	@mkdir -p $(dir $@) $(BUILD)/cuda
	$(if $(Q),@echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCC_FLAGS) -c $< -o $@ 2> $(BUILD)/cuda/ptxas.log || { cat $(BUILD)/cuda/ptxas.log >&2; exit 1; }
	$(Q)NVCC='$(NVCC)' scripts/check-sass.sh $@ $(BUILD)/cuda/sass.log || { rm -f $@; exit 1; }

# Library objects: only what qs.h marks QS_API is visible outside libqs.
$(BUILD)/lib/%.o: lib/%.c $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_INC) -fvisibility=hidden -MMD -MP -c $< -o $@

$(STATIC_LIB): $(LIB_OBJ)
	$(if $(Q),@echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libqs.so.$(SOVERSION) -Wl,--no-undefined \
	    -Wl,--exclude-libs,ALL \
	    -o $@ $^ $(ALL_LDFLAGS) $(LIBS)
	$(Q)ln -sf libqs.so.$(LIB_VERSION) $(BUILD)/libqs.so.$(SOVERSION)
	$(Q)ln -sf libqs.so.$(SOVERSION) $(BUILD)/libqs.so

$(BUILD)/bin/%: $(BUILD)/tools/%/main.o $(TOOL_COMMON_OBJ) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(ALL_LDFLAGS) $(LIBS) $(TOOL_LIBS)

# Tools of more than one file.
$(BUILD)/bin/qs-score: $(BUILD)/tools/qs-score/pipeline.o
$(BUILD)/bin/qs-compile: $(BUILD)/tools/qs-compile/info.o

$(BUILD)/bench/parse: $(BUILD)/bench/parse.o $(TOOL_COMMON_OBJ) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(ALL_LDFLAGS) $(LIBS)

# The fault injector of the tests (tests/faults/qsfault.c, LD_PRELOAD): a
# plain shared object, never instrumented, whatever the build.
$(FAULT_SO): tests/faults/qsfault.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) -std=c11 -O2 -g $(WARN) -fPIC -shared -o $@ $< -ldl

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(LIBS)

# bench/cuda-kernel: the GPU-QS kernel alone (or, with --emu, the emulator).
$(BUILD)/bench/cuda-kernel: $(BUILD)/bench/cuda_kernel.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(LIBS)

$(BUILD)/bench/cuda-%: bench/cuda_%.cu $(BUILD)/.flags
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  NVCC    $<")
	$(Q)$(NVCC) -std=c++17 -O3 $(CUDA_ARCH) -o $@ $<

define MUTANT_RULES
$(BUILD)/mutant$(1)/%.o: %.c $(BUILD)/.flags
	@mkdir -p $$(dir $$@)
	$$(if $$(Q),@echo "  CC      $$< (mutation $(1))")
	$$(Q)$$(CC) $$(ALL_CFLAGS) $$(LIB_INC) $$(TOOL_INC) -fvisibility=hidden -DQS_CU_MUTATION=$(1) -MMD -MP -c $$< -o $$@
$(BUILD)/tests/test_cuda_emu_mut$(1): $(BUILD)/mutant$(1)/tests/unit/test_cuda_emu.o $(CUDA_C_SRC:%.c=$(BUILD)/mutant$(1)/%.o) $(STATIC_LIB)
	@mkdir -p $$(dir $$@)
	$$(if $$(Q),@echo "  LD      $$@")
	$$(Q)$$(CC) $$(ALL_CFLAGS) -o $$@ $$^ $$(ALL_LDFLAGS) $$(LIBS)
endef
$(foreach n,$(MUTANTS),$(eval $(call MUTANT_RULES,$(n))))

$(BUILD)/bench/qs-matrix: $(BUILD)/bench/qs_matrix.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(LIBS)

# bin/ holds links to the current build's tools, for the tests and the demo.
.PHONY: bin-links
bin-links: $(TOOL_BIN) $(UNIT_BIN) $(FUZZ_REPLAY_BIN)
	@mkdir -p bin
	@for t in $(TOOLS); do ln -sf ../$(BUILD)/bin/$$t bin/$$t; done
	@ln -sfn ../$(BUILD)/tests bin/unit
	@ln -sfn ../$(BUILD)/fuzz bin/fuzz

-include $(LIB_OBJ:.o=.d) $(TOOL_COMMON_OBJ:.o=.d) $(TOOLS:%=$(BUILD)/tools/%/main.d) $(BUILD)/tools/qs-score/pipeline.d $(BUILD)/tools/qs-compile/info.d $(BUILD)/bench/parse.d $(BUILD)/bench/qs_matrix.d $(BUILD)/bench/cuda_kernel.d $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%.d)

# ------------------------------------------------------------ targets
# The whole suite, then (plain build) the conformance tests once more per
# SIMD level this CPU has, with the wider levels disabled
# (QS_DISABLE_CPU_FEATURES), on auto and the back ends that read the
# QuickScorer layout.  The sanitizer build runs its pass (a subset of the
# files: scripts/check-all.sh says which).  Every part runs whatever became
# of the others, and a summary names each one, run or not.  check-all: the
# plain parts, then the sanitizer build and its pass (scripts/setup.sh test).
check: all
	+SANITIZE='$(SANITIZE)' MAKE='$(MAKE)' ./scripts/check-all.sh

check-all: all
ifneq ($(SANITIZE),)
	@echo "make check-all builds both: run it without SANITIZE" >&2; exit 2
endif
	+MAKE='$(MAKE)' ./scripts/check-all.sh --with-sanitizers

# Every fault point of tests/faults/all.sh (tests/66-faults.bats runs a
# sample of them): each allocation, thread start and read of a small run
# of every tool failed in turn; the count of faulted runs at the end.
check-faults: all
	./tests/faults/all.sh

demo: all
	./scripts/demo.sh

# the Python binding's sdist and manylinux wheel (scripts/wheel.sh: PyPI's
# build and auditwheel in a throw-away venv) into build/dist
.PHONY: wheel
wheel:
	scripts/wheel.sh $(BUILD)/dist

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(PKGDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(DOCDIR)/format
	install -m 755 $(TOOL_BIN) $(DESTDIR)$(BINDIR)/
	install -m 644 $(TOOLS:%=man/%.1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 man/libqs.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 644 $(FORMAT_DOCS) $(DESTDIR)$(DOCDIR)/format/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(LIBDIR)/
	ln -sf libqs.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/libqs.so.$(SOVERSION)
	ln -sf libqs.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libqs.so
	install -m 644 include/qs.h $(DESTDIR)$(INCDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
	    -e 's|@VERSION@|$(LIB_VERSION)|' \
	    qs.pc.in > $(DESTDIR)$(PKGDIR)/qs.pc

uninstall:
	rm -f $(TOOLS:%=$(DESTDIR)$(BINDIR)/%) $(DESTDIR)$(LIBDIR)/libqs.a \
	      $(DESTDIR)$(LIBDIR)/libqs.so $(DESTDIR)$(LIBDIR)/libqs.so.$(SOVERSION) \
	      $(DESTDIR)$(LIBDIR)/libqs.so.$(LIB_VERSION) \
	      $(DESTDIR)$(INCDIR)/qs.h $(DESTDIR)$(PKGDIR)/qs.pc \
	      $(TOOLS:%=$(DESTDIR)$(MANDIR)/man1/%.1) $(DESTDIR)$(MANDIR)/man3/libqs.3 \
	      $(FORMAT_DOCS:format/%=$(DESTDIR)$(DOCDIR)/format/%)
	-rmdir $(DESTDIR)$(DOCDIR)/format $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -rf build build-san build-scoring build-fuzz bin

help:
	@echo "make            build the tools (build/bin/) and link them into bin/"
	@echo "make lib        the library alone (READERS=0: without the model readers, libexpat, protobuf-c)"
	@echo "make check      build, then run the whole bats suite (tests/) and the SIMD-off passes"
	@echo "make check-all  make check, then the sanitizer build and its pass (scripts/setup.sh test)"
	@echo "make check-faults  every allocation, thread start and read of small runs failed in turn (tests/faults/)"
	@echo "make demo       convert, compile and score the bundled example model"
	@echo "make oracle     unpack the conformance tests' oracle data (tests/oracle) into build/oracle"
	@echo "make install    install tools, their manual pages, libqs(3), libqs.a, libqs.so, qs.h, qs.pc and format/*.md (PREFIX=$(PREFIX) DESTDIR=)"
	@echo "make uninstall  remove what install put there"
	@echo "make fuzz       build the libFuzzer targets with clang and run each FUZZ_SECONDS (60)"
	@echo "make fuzz-long  the long campaign: each target to FUZZ_LONG_RUNS (10^7) or FUZZ_LONG_SECONDS, a table at the end"
	@echo "make clean      remove build outputs"
	@echo "knobs: CC= CFLAGS= SANITIZE=address,undefined HAVE_OPENMP=0 HAVE_NUMA=0 HAVE_CUDA=0 V=1"

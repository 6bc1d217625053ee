# fuzz/fuzz.mk: fuzzing rules, included by the Makefile after its sources section (uses BUILD, CC, ALL_CFLAGS, ALL_LDFLAGS, LIBS, STATIC_LIB, LIB_SRC, Q).
#
#   make                 also builds $(BUILD)/fuzz/replay_<target>: the target's
#                        LLVMFuzzerTestOneInput behind a plain main() that replays
#                        files (no libFuzzer; gcc, or the sanitizer build);
#                        tests/40-fuzz-corpus.bats replays every corpus with them.
#   make fuzz            builds every target with clang -fsanitize=fuzzer,address,
#                        undefined in $(FUZZ_BUILD)/ and runs each FUZZ_SECONDS on a
#                        scratch copy of its corpus (make -j2 fuzz: two at a time)
#   make fuzz-<target>   one of them: $(FUZZ_TARGETS)
#   make fuzz-build      only build the libFuzzer binaries
#   make fuzz-long       the long campaign (fuzz/long.sh): every target in turn,
#                        one niced process, until FUZZ_LONG_RUNS executions or
#                        FUZZ_LONG_SECONDS each; a summary table at the end
#
# Knobs: FUZZ_SECONDS=60  FUZZ_CC=clang  FUZZ_BUILD=build-fuzz
#        FUZZ_WORK=/tmp/qs-fuzz (scratch: corpus copies, new inputs, crashes)
#        FUZZ_FLAGS= (extra libFuzzer flags, e.g. -runs=100000)
#        FUZZ_MAX_LEN= (the inputs' bound; default per target, fuzz/maxlen.sh)
#        FUZZ_LONG_RUNS=10000000 FUZZ_LONG_SECONDS=600 FUZZ_LONG_TARGETS=
#        FUZZ_LONG_JOBS=1 (fuzz-long: targets at a time, one core each)

# Keep the includer's default goal: these rules must not become `make`'s.
FUZZ_SAVED_GOAL := $(.DEFAULT_GOAL)

FUZZ_TARGETS := lightgbm xgboost xgboost_bin catboost cbm onnx quickrank text qsm letor eval dsv cats binding
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_WORK    ?= $(or $(TMPDIR),/tmp)/qs-fuzz
FUZZ_FLAGS   ?=
FUZZ_LONG_RUNS    ?= 10000000
FUZZ_LONG_SECONDS ?= 600
FUZZ_LONG_JOBS    ?= 1

# ------------------------------------------------------- replay (normal build)
FUZZ_REPLAY_BIN := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay_%)

$(BUILD)/fuzz/replay_%: $(BUILD)/fuzz/replay.o $(BUILD)/fuzz/fuzz_%.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(ALL_LDFLAGS) $(LIBS)

# cats also checks the tools' JSON writer, which it links
$(BUILD)/fuzz/replay_cats: $(BUILD)/tools/common/json.o

-include $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%.d) $(BUILD)/fuzz/replay.d

# ------------------------------------------------------- libFuzzer build
# Its own directory and flags: every object (lib/*.c too) is instrumented for
# coverage and built with ASan+UBSan; UBSan aborts at the first report.
# OpenMP and NUMA stay off: they add nothing to parsing and confuse ASan.
FUZZ_SAN    := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -Iinclude -Ilib -I$(BUILD)/gen -Itools/common \
               -DQS_HAVE_OPENMP=0 -DQS_HAVE_NUMA=0 -DQS_HAVE_CUDA=0 -DQS_HAVE_READERS=1 -DQS_LIBFUZZER=1 \
               $(FUZZ_SAN)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/%.o) $(LIB_GEN:%=$(FUZZ_BUILD)/gen/%.o)
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/bin/fuzz_%)

# The scoring loops (kernels, the tree walk, the workspace, the emulated
# GPU) keep their edge coverage and ASan but lose the comparison tracing
# (trace-cmp): its callbacks on every node test were two thirds of the
# time of a target that scores, and a comparison of a document's value
# with a threshold holds no magic value for the mutator to learn.  The
# readers, the checks and the layout keep it.
FUZZ_NO_CMP_SRC := lib/score/qs.c lib/score/walk.c lib/score/workspace.c lib/score/baselines.c \
                   lib/score/dense.c lib/score/matrix.c lib/score/x86/vqs_avx2.c \
                   lib/score/x86/vqs_avx512.c lib/score/cuda/emu.c
$(FUZZ_NO_CMP_SRC:%.c=$(FUZZ_BUILD)/%.o): FUZZ_CFLAGS += -fno-sanitize-coverage=trace-cmp
$(FUZZ_NO_CMP_SRC:%.c=$(FUZZ_BUILD)/%.o): fuzz/fuzz.mk

$(FUZZ_BUILD)/.flags: FORCE
	@mkdir -p $(FUZZ_BUILD)
	@echo '$(FUZZ_CC) $(FUZZ_CFLAGS)' | cmp -s - $@ || echo '$(FUZZ_CC) $(FUZZ_CFLAGS)' > $@

$(FUZZ_BUILD)/%.o: %.c $(FUZZ_BUILD)/.flags
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC-FUZZ $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

# The generated parsers (made in $(BUILD)/gen by the Makefile's rule).
$(FUZZ_BUILD)/gen/%.o: $(BUILD)/gen/%.c $(FUZZ_BUILD)/.flags
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC-FUZZ $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(PROTOBUF_C_CFLAGS) -MMD -MP -c $< -o $@
$(LIB_GEN_USERS:%.c=$(FUZZ_BUILD)/%.o): $(LIB_GEN:%=$(BUILD)/gen/%.h)

$(FUZZ_BUILD)/bin/fuzz_%: $(FUZZ_BUILD)/fuzz/fuzz_%.o $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  LD-FUZZ $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ $(LIBS)

$(FUZZ_BUILD)/bin/fuzz_cats: $(FUZZ_BUILD)/tools/common/json.o

-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz/fuzz_%.d)

# ------------------------------------------------------- running
.PHONY: fuzz fuzz-build fuzz-long $(FUZZ_TARGETS:%=fuzz-%)
fuzz-build: $(FUZZ_BIN)

fuzz: $(FUZZ_TARGETS:%=fuzz-%)
	@echo "fuzz: all $(words $(FUZZ_TARGETS)) targets ran $(FUZZ_SECONDS)s each without a finding"

$(FUZZ_TARGETS:%=fuzz-%): fuzz-%: $(FUZZ_BUILD)/bin/fuzz_%
	$(Q)FUZZ_SECONDS='$(FUZZ_SECONDS)' FUZZ_WORK='$(FUZZ_WORK)' FUZZ_FLAGS='$(FUZZ_FLAGS)' \
	    ./fuzz/run.sh $* $<

fuzz-long: $(FUZZ_BIN)
	$(Q)FUZZ_LONG_RUNS='$(FUZZ_LONG_RUNS)' FUZZ_LONG_SECONDS='$(FUZZ_LONG_SECONDS)' \
	    FUZZ_LONG_JOBS='$(FUZZ_LONG_JOBS)' \
	    FUZZ_WORK='$(FUZZ_WORK)' FUZZ_FLAGS='$(FUZZ_FLAGS)' \
	    ./fuzz/long.sh $(FUZZ_BUILD) $(or $(FUZZ_LONG_TARGETS),$(FUZZ_TARGETS))

.DEFAULT_GOAL := $(FUZZ_SAVED_GOAL)

# lib/lib.mk: the library's sources, one section per layer (lib/README.md
# says what each folder may include).  Included by the Makefile.

# common: the source libraries' table (source.c), errors, number parsing,
# score printing, CRC-32C, CPU features and cache sizes, growing arrays,
# whole-file reads, thread starts (threads.c)
LIB_SRC += lib/common/error.c lib/common/number.c lib/common/format.c lib/common/crc32c.c \
           lib/common/cpu.c lib/common/vec.c lib/common/file.c lib/common/threads.c \
           lib/common/source.c

# model: the canonical ensemble, its validation, walk and text form
LIB_SRC += lib/model/model.c lib/model/text.c lib/model/stats.c

# convert: the table of readers, one file per format (READERS=0: the table,
# its readers NULL, and the canonical text only; no libexpat, no protobuf-c)
LIB_SRC += lib/convert/convert.c lib/convert/json.c
READER_SRC := lib/convert/lightgbm.c lib/convert/xgboost.c lib/convert/quickrank.c \
              lib/convert/catboost.c lib/convert/cbm.c lib/convert/version.c lib/convert/onnx.c \
              lib/convert/features.c
ifneq ($(READERS),0)
LIB_SRC += $(READER_SRC)
# generated from lib/convert/onnx.proto by protoc-c (into $(BUILD)/gen), and
# the sources that include its header
LIB_GEN := convert/onnx.pb-c
LIB_GEN_USERS := lib/convert/onnx.c
else
LIB_GEN :=
LIB_GEN_USERS :=
endif

# layout: the QuickScorer layout and the .qsm container
LIB_SRC += lib/layout/layout.c lib/layout/cattab.c lib/layout/qsm.c

# score: scorer, workspaces, transforms, the back-end registry and back ends,
# the threaded matrix driver
LIB_SRC += lib/score/scorer.c lib/score/workspace.c lib/score/transform.c \
           lib/score/registry.c lib/score/walk.c lib/score/qs.c lib/score/baselines.c \
           lib/score/matrix.c lib/score/dense.c lib/score/info.c lib/score/blocking.c \
           lib/score/vqs_plan.c

# open: the one open path, a model's file or bytes to a scorer (sniffing,
# zstd, any reader, compile, the tuning record): qs-score and the binding
LIB_SRC += lib/open/open.c

# score/x86: vQS, picked at run time: the back ends, and the kernels of
# each ISA, compiled from one template (vqs_kernel.h)
LIB_SRC += lib/score/x86/vqs_backends.c lib/score/x86/vqs_avx2.c lib/score/x86/vqs_avx512.c

# score/cuda: GPU-QS (the driver, the device tables, the emulator; the
# kernels in kernels.cu are built by nvcc when found: Makefile, LIB_CU)
LIB_SRC += lib/score/cuda/driver.c lib/score/cuda/tables.c lib/score/cuda/emu.c

# eval: ranking metrics
LIB_SRC += lib/eval/eval.c

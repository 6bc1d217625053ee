#!/bin/sh
# sass-tools.sh: cuobjdump and nvdisasm from PyPI (NVIDIA's
# nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels) in a virtual
# environment under build/sass-tools, for the build's SASS gates
# (scripts/check-sass.sh).  Never a dependency: without them (no network,
# no python3-venv) the gates are skipped with the reason.
set -eu
cd "$(dirname "$0")/.."
dir=build/sass-tools
if ls "$dir"/venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump > /dev/null 2>&1; then
    exit 0
fi
command -v python3 > /dev/null || { echo "sass-tools.sh: no python3" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
python3 -m venv "$dir/venv" || { echo "sass-tools.sh: python3 -m venv failed (python3-venv)" >&2; exit 1; }
"$dir/venv/bin/pip" install -q --disable-pip-version-check nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm ||
    { echo "sass-tools.sh: pip install failed (no network?)" >&2; exit 1; }
ls "$dir"/venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump

#!/usr/bin/env bash
# The WebGPU tier's figures on a machine with a real GPU, in one short run (docs/webgpu.md,
# "On a real GPU"). Two steps:
#
#   bash tools/gpu_machine.sh prepare      here, with the registries: into .gpu-carry/ (ignored)
#                                          the wheels the GPU machine lacks (wgpu and what it
#                                          needs, gguf) and the Vulkan loader's .debs; the native
#                                          kernels built (engine/_lib, ignored)
#   bash tools/gpu_machine.sh run          there, from a copy of this tree with .gpu-carry and
#                                          engine/_lib beside it (no network needed): unpacks
#                                          the loader, installs the wheels into /tmp/site, names
#                                          the adapter, makes the full-size synthetic model and
#                                          runs `python3 -m harness.bench_webgpu --size full`
#                                          (the GPU executor against the best native CPU tier on
#                                          one thread, the same process; per-kernel timestamps
#                                          beside the cost model). Figures to $OUT (or ./gpu-out).
#
# The machine assumed: x86-64 Linux, Python 3.12 with numpy, filelock, pyyaml, tqdm (PY_VERSION
# and the package list below say what to change for another), an NVIDIA driver whose Vulkan
# ICD sits under /usr/local/nvidia (VK_DRIVER_FILES overrides it). A dry run on this VM's
# lavapipe: PY_VERSION=3.11 for prepare, GPU_MACHINE_DRY=1 for run (keeps the system's loader).
set -euo pipefail
cd "$(dirname "$0")/.."
CARRY=.gpu-carry
PY_VERSION=${PY_VERSION:-3.12}
# the wheels to carry, at the versions this checkout's environment has (its tests ran with them);
# the GPU machine is assumed to hold their other needs (numpy, pyyaml, requests, tqdm, filelock)
WHEELS=(wgpu rendercanvas cffi pycparser gguf)
DEBS=(libvulkan1)
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}

prepare() {
    rm -rf "$CARRY" && mkdir -p "$CARRY/whl" "$CARRY/deb"
    for name in "${WHEELS[@]}"; do
        local wheel
        wheel="$name==$("$PYTHON" -c "import sys; from importlib.metadata import version; print(version(sys.argv[1]))" "$name")"
        "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version "$PY_VERSION" \
            --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
            --platform manylinux2014_x86_64 --platform any -d "$CARRY/whl" "$wheel"
    done
    local lists=/tmp/gpu-carry-apt
    mkdir -p "$lists/partial"
    local apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
    apt-get "${apt_opts[@]}" -qq update
    (cd "$CARRY/deb" && apt-get "${apt_opts[@]}" -qq download "${DEBS[@]}")
    "$PYTHON" build.py native
    du -sh "$CARRY" engine/_lib
    echo "carry: $CARRY engine/_lib; command: bash tools/gpu_machine.sh run"
}

run() {
    local out=${OUT:-gpu-out}
    mkdir -p "$out"
    if [ -z "${GPU_MACHINE_DRY:-}" ]; then
        for deb in "$CARRY"/deb/*.deb; do dpkg -x "$deb" /; done
        ldconfig
        local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
        if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; fi
    fi
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site "$CARRY"/whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
    nvidia-smi -L 2>/dev/null | tee "$out/gpu.txt" || true
    python3 -c "import wgpu, json; a = wgpu.gpu.request_adapter_sync(power_preference='high-performance'); \
print(json.dumps(dict(a.info), indent=1)); print(sorted(a.features))" | tee "$out/adapter.txt"
    python3 -m harness.bench_webgpu --size full --repeats 3 --no-result --json "$out/webgpu.json" \
        2>&1 | tee "$out/bench_webgpu.txt"
    python3 -m harness.webgpu_cost --size full 2>&1 | tee "$out/cost.txt"
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    *) echo "usage: bash tools/gpu_machine.sh prepare|run" >&2; exit 2 ;;
esac

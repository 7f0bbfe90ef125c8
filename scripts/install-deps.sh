#!/usr/bin/env bash
# Installs every Debian 12 package that the build, the tests and the demo need.
# Idempotent: packages already present are skipped; `apt-get update` runs at most once.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache git pkg-config
  # compiler side: MLIR / LLVM 22 (lit and FileCheck come with llvm-22-tools)
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # runtime side: LibTorch 1.13 CPU, Gloo headers for c10d, fast BLAS
  libtorch-dev libgloo-dev libopenblas0-pthread
  # artifact formats: ONNX + protobuf, JSON, CLI parsing
  libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev libcli11-dev
  # NIR graphs (HDF5)
  libhdf5-dev
  # gzip (Fashion-MNIST IDX files) and CRC-32 (checkpoints)
  zlib1g-dev
  # tests (clang-22 and its runtimes: the libFuzzer targets, scripts/fuzz.sh)
  libgtest-dev googletest clang-22 libclang-rt-22-dev
  # e2e.report renders snn-run report's page in a headless browser
  chromium-headless-shell
  # Python reference side (Debian's python3, not a pyenv one)
  python3 python3-torch python3-onnx python3-numpy python3-h5py
  # the spikemesh Python extension module
  python3-dev pybind11-dev
  # data
  dataset-fashion-mnist
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

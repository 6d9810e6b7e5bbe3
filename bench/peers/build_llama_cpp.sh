#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, llama-quantize, llama-embedding and test-backend-ops (CPU only,
# native) as a benchmark peer for bench/compare.py, bench/embed_compare.py and
# bench/kernel_compare.py, plus llama-speculative-simple, llama-lookup and llama-cli where the
# pinned tree has those targets (for speculative-decoding comparisons), and mote-ggml-matvec
# (bench/peers/ggml_matvec.cpp: one ggml_mul_mat timed on the CPU backend) against that build's
# ggml. The source is llama.cpp as vendored in the PyPI source distribution of
# llama-cpp-python (PyPI is reachable where GitHub may not be), pinned so that every run
# compares against the same llama.cpp (0c1e57098bba, ggml 0.25.3).
#
# Everything lives outside the repository, in $XDG_CACHE_HOME/mote/peers (default
# ~/.cache/mote/peers): the sdist, the unpacked tree and the build. A second run reuses the
# build when every binary this script now asks for is there (mote-ggml-matvec is recompiled
# alone when its source is newer). The last line of output is the folder holding the binaries.
# Never used by CI.
#
# --avx2 builds, in a folder of its own, only ggml and mote-ggml-matvec for AVX2+FMA+F16C+BMI2
# (GGML_NATIVE=OFF, AVX-VNNI and AVX-512 off): the ggml to put next to mote's avx2 kernel table,
# where the native build would use AVX-512.
#
# Usage: bench/peers/build_llama_cpp.sh [--jobs N] [--avx2]   (default 2; this machine is shared)
set -euo pipefail

version=0.3.36
jobs=2
flavour=native
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs|-j) jobs=$2; shift 2 ;;
    --avx2) flavour=avx2; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "build_llama_cpp: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote/peers"
src="$cache/llama-cpp-python-$version"
tree="$src/vendor/llama.cpp"
build="$cache/llama.cpp-build-$version"
[ "$flavour" = native ] || build="$build-$flavour"
bin="$build/bin"

say() { echo "build_llama_cpp: $*" >&2; }

# Always built; a missing one fails the script.
required=(llama-bench llama-quantize llama-embedding test-backend-ops)
# Built when the pinned tree defines the target (names move between llama.cpp versions).
optional=(llama-speculative-simple llama-lookup llama-cli)
isa=(-DGGML_NATIVE=ON)
if [ "$flavour" = avx2 ]; then
  # ggml's libraries alone (the ggml target pulls in ggml-base and ggml-cpu).
  required=() optional=()
  isa=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
    -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF)
fi
# Records which optional targets the last configure found, so that the fast path knows what
# to expect without configuring again; its first line is the optional list it was made for.
stamp="$build/mote-optional-targets"
here=$(cd "$(dirname "$0")" && pwd)
matvec_src="$here/ggml_matvec.cpp"

# mote-ggml-matvec: our own timing program, compiled outside any CMake project against the
# build's ggml (its shared libraries sit in $bin; the rpath finds them there).
build_matvec() {
  say "compiling $bin/mote-ggml-matvec"
  "${CXX:-c++}" -O2 -std=c++17 -I"$tree/ggml/include" "$matvec_src" -o "$bin/mote-ggml-matvec" \
    -L"$bin" -lggml-cpu -lggml-base -lggml -Wl,-rpath,"$bin" -pthread
}

have_all() {
  local t
  for t in "${required[@]}"; do [ -x "$bin/$t" ] || return 1; done
  [ -e "$bin/libggml-cpu.so" ] || return 1
  [ -f "$stamp" ] && [ "$(head -n1 "$stamp")" = "${optional[*]}" ] || return 1
  for t in $(tail -n +2 "$stamp"); do [ -x "$bin/$t" ] || return 1; done
}

if have_all; then
  say "reusing the build in $build"
  if [ ! -x "$bin/mote-ggml-matvec" ] || [ "$matvec_src" -nt "$bin/mote-ggml-matvec" ]; then build_matvec; fi
  echo "$bin"
  exit 0
fi

mkdir -p "$cache"
if [ ! -f "$tree/CMakeLists.txt" ]; then
  tmp=$(mktemp -d "$cache/download.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  say "downloading the source distribution of llama-cpp-python==$version from PyPI"
  # --no-binary names the package alone: ':all:' would also build pip's build-time helpers
  # (setuptools, scikit-build-core, ...) from source just to read the sdist's metadata.
  python3 -m pip download --no-deps --no-binary llama-cpp-python --quiet --disable-pip-version-check \
    --dest "$tmp" "llama-cpp-python==$version" >&2
  tarball=$(find "$tmp" -maxdepth 1 -name 'llama[_-]cpp[_-]python-*.tar.gz' | head -n1)
  [ -n "$tarball" ] || { say "no sdist tarball in the download"; exit 1; }
  rm -rf "$src"
  mkdir "$tmp/unpacked"
  tar -xzf "$tarball" -C "$tmp/unpacked"
  unpacked=$(find "$tmp/unpacked" -mindepth 1 -maxdepth 1 -type d | head -n1)
  [ -f "$unpacked/vendor/llama.cpp/CMakeLists.txt" ] ||
    { say "the sdist has no vendor/llama.cpp tree"; exit 1; }
  mv "$unpacked" "$src"
fi

# GGML_NATIVE=ON enables ggml's AMX kernels when the compiler defines __AMX_*__; on this
# machine kind they crash (SIGILL/SEGV on Q4_0/Q4_1), so the macros are undefined again.
no_amx="-U__AMX_TILE__ -U__AMX_INT8__ -U__AMX_BF16__"
say "configuring $tree"
cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  "${isa[@]}" -DCMAKE_C_FLAGS="$no_amx" -DCMAKE_CXX_FLAGS="$no_amx" \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_EXAMPLES=ON >&2
# `--target help` lists every target, as "... name" (Makefiles) or "name: phony" (Ninja).
targets=$(cmake --build "$build" --target help 2>/dev/null)
found=()
for t in "${optional[@]}"; do
  if grep -Eq "(^|[ .])$t(:| |\$)" <<<"$targets"; then found+=("$t"); fi
done
say "building ggml ${required[*]} ${found[*]} with -j$jobs (a while on 2 cores)"
cmake --build "$build" --target ggml "${required[@]}" "${found[@]}" -j "$jobs" >&2
for t in "${required[@]}" "${found[@]}"; do
  [ -x "$bin/$t" ] || { say "the build finished but $bin lacks $t"; exit 1; }
done
printf '%s\n' "${optional[*]}" "${found[@]}" >"$stamp"
build_matvec
echo "$bin"

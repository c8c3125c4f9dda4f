#!/bin/sh
# Prepare a Debian 12 machine for ditstar and build it.
#
#   ./setup.sh            install packages, build StarPU 1.4 (once), configure and build ditstar
#   ./setup.sh run        the same, then run the default job (the built-in tiny Wan model)
#   ./setup.sh check      the same, then the whole test suite; ends with "N passed, N failed"
#   ./setup.sh --deps     only the packages and StarPU
#   ./setup.sh tools      only the venv of tools/ditstar-encode and ditstar-decode (below)
#   ./setup.sh tools check  the same, then their test (make check-tools; ditstar built)
#   ./setup.sh simgrid    the build, plus a second StarPU 1.4 built with --enable-simgrid
#                         (Debian's libsimgrid-dev) in $DITSTAR_STARPU_PREFIX-simgrid, and
#                         ditstar configured --with-starpu-simgrid: builds ditstar-sim
#
# StarPU 1.4 is built from Debian's source package (unstable archive), because the
# bookworm binary package is 1.3.10 (no FxT, out-of-core corruption above 2 GiB).
# The prefix is $DITSTAR_STARPU_PREFIX (default: ~/.local/ditstar/starpu-1.4); a
# prefix that already holds a build is reused.
#
# CUDA: when nvcc is found (PATH or /usr/local/cuda/bin), StarPU is built with its CUDA
# driver against that toolkit, with patches/starpu-1.4-cuda13.patch (CUDA 13 removed a
# field StarPU reads), and ditstar's CUDA codelets are built; DITSTAR_CUDA=no skips CUDA.
# No GPU is needed to build: without one the CUDA tests skip.
#
# tools: a Python venv at $DITSTAR_TOOLS_VENV (default ${DITSTAR_CACHE:-~/.cache/ditstar}/tools-venv)
# with torch, transformers, diffusers and the rest from PyPI; torch is tried first from
# PyTorch's CPU-only index ($DITSTAR_TOOLS_TORCH_INDEX, "" for PyPI only), else PyPI's
# (a few GB with its CUDA libraries). A venv whose packages import is reused. Neither the
# build nor `make check` needs it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prefix=${DITSTAR_STARPU_PREFIX:-${HOME:-/root}/.local/ditstar/starpu-1.4}
jobs=$(nproc 2>/dev/null || echo 2)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

log() { printf 'setup: %s\n' "$*"; }

# ---------------------------------------------------------------- ./setup.sh tools [check]
tools_venv() {
  venv=${DITSTAR_TOOLS_VENV:-${DITSTAR_CACHE:-${HOME:-/root}/.cache/ditstar}/tools-venv}
  py=$venv/bin/python
  # the classes of every family: a venv of older packages is upgraded
  imports='import torch, transformers, diffusers, safetensors, numpy, PIL, imageio_ffmpeg, tokenizers
from transformers import Qwen2_5_VLForConditionalGeneration, Gemma3ForConditionalGeneration
from diffusers import AutoencoderKLWan, AutoencoderKLHunyuanVideo, AutoencoderKLLTX2Video
from diffusers.pipelines.ltx2.connectors import LTX2TextConnectors'
  if [ -x "$py" ] && "$py" -c "$imports" 2>/dev/null; then
    log "tools venv $venv is ready"
  else
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
      log "installing Debian package: python3-venv"
      { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
          $sudo apt-get install -y -qq --no-install-recommends python3-venv; } >/dev/null 2>&1 ||
        { echo "setup: apt-get install python3-venv failed" >&2; exit 1; }
    fi
    mkdir -p "$(dirname "$venv")"
    [ -x "$py" ] || python3 -m venv "$venv" || { echo "setup: python3 -m venv $venv failed" >&2; exit 1; }
    pylog=$venv/install.log
    log "installing the tools' Python packages into $venv (minutes; log: $pylog)"
    : >"$pylog"
    "$py" -m pip install -q --upgrade pip >>"$pylog" 2>&1 || true
    index=${DITSTAR_TOOLS_TORCH_INDEX-https://download.pytorch.org/whl/cpu}
    reqs=$here/tools/requirements.txt # the versions make check-tools passed with
    torch=$(grep '^torch==' "$reqs")
    if ! "$py" -c 'import torch' 2>/dev/null; then
      if [ -z "$index" ] || ! "$py" -m pip install -q --timeout 15 --retries 0 --index-url "$index" "$torch" \
          >>"$pylog" 2>&1; then
        [ -z "$index" ] || log "no torch from $index: installing PyPI's (several GB)"
        "$py" -m pip install -q "$torch" >>"$pylog" 2>&1 ||
          { tail -n 5 "$pylog" >&2; echo "setup: pip install $torch failed (all of it in $pylog)" >&2; exit 1; }
      fi
    fi
    grep -v '^torch==' "$reqs" | "$py" -m pip install -q -r /dev/stdin >>"$pylog" 2>&1 ||
      { tail -n 5 "$pylog" >&2; echo "setup: pip install -r $reqs failed (all of it in $pylog)" >&2; exit 1; }
    "$py" -c "$imports" 2>>"$pylog" ||
      { echo "setup: the tools' packages still do not import (see $pylog)" >&2; exit 1; }
  fi
  "$py" -c 'import torch, transformers, diffusers
print("setup: torch %s, transformers %s, diffusers %s" % (torch.__version__, transformers.__version__, diffusers.__version__))'
  log "tools venv: $venv (tools/ditstar-encode and ditstar-decode run themselves with $py)"
}
if [ "${1:-}" = tools ]; then
  case ${2:-} in
    ""|check) ;;
    *) echo "usage: ./setup.sh tools [check]" >&2; exit 2 ;;
  esac
  tools_venv
  if [ "${2:-}" = check ]; then
    [ -f "$here/Makefile" ] && [ -x "$here/ditstar" ] ||
      { echo "setup: build ditstar first (./setup.sh), then ./setup.sh tools check" >&2; exit 1; }
    cd "$here"
    DITSTAR_TOOLS_VENV=$venv exec make -s check-tools
  fi
  exit 0
fi

packages="build-essential patch autoconf automake libtool pkg-config dpkg-dev ca-certificates
  libopenblas-dev libhwloc-dev libarchive-dev libjson-c-dev libfxt-dev libxxhash-dev clang libclang-rt-dev
  valgrind zstd fiu-utils libfiu-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd python3 python3-numpy gnuplot-nox pajeng vite
  recutils"
# SimGrid only for ./setup.sh simgrid (an if: under set -e a failing test in a command
# substitution would end the script)
if [ "${1:-}" = simgrid ]; then
  packages="$packages libsimgrid-dev"
fi

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "installing Debian packages:$missing"
  aptlog=$(mktemp)
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      $sudo apt-get install -y -qq --no-install-recommends $missing; } >"$aptlog" 2>&1; then
    tail -n 20 "$aptlog" >&2
    rm -f "$aptlog"
    echo "setup: apt-get failed" >&2
    exit 1
  fi
  rm -f "$aptlog"
fi

# CUDA toolkit: nvcc on PATH, else the standard prefix.
cuda_dir=""
if [ "${DITSTAR_CUDA:-auto}" != no ]; then
  if command -v nvcc >/dev/null 2>&1; then
    cuda_dir=$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)
  elif [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_dir=/usr/local/cuda
  fi
fi
want_flavour=$([ -n "$cuda_dir" ] && echo cuda || echo nocuda)

# build_starpu PREFIX FLAVOUR: StarPU 1.4 from Debian's source into PREFIX; FLAVOUR
# cuda, nocuda or simgrid (SimGrid simulates every device: no CUDA driver is built).
build_starpu() {
  prefix=$1 flavour=$2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # A private apt configuration: the deb-src entry for unstable lives only in $work and
  # leaves the system's sources and package lists untouched.
  mkdir -p "$work/apt/sources" "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/src"
  cat > "$work/apt/sources/sid-src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  aptopts="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/apt/sources
    -o Dir::State::Lists=$work/apt/lists -o Dir::Cache=$work/apt/cache -o APT::Sandbox::User=root"
  log "fetching the StarPU 1.4 source package from Debian unstable"
  apt-get $aptopts update -qq
  version=$(apt-cache $aptopts showsrc starpu | sed -n 's/^Version: //p' | grep '^1\.4\.' | sort -V | tail -n 1)
  [ -n "$version" ] || { echo "setup: Debian unstable serves no StarPU 1.4.x source" >&2; exit 1; }
  # apt checks the downloaded files against the signed archive index; dpkg-source
  # cannot check the .dsc signature itself without the uploader's key, hence 2>.
  (cd "$work/src" && apt-get $aptopts source -qq --download-only "starpu=$version" >/dev/null &&
     dpkg-source -x --skip-patches starpu_*.dsc tree >dpkg-source.log 2>&1) ||
    { cat "$work/src/dpkg-source.log" >&2 2>/dev/null; echo "setup: cannot fetch StarPU $version" >&2; exit 1; }
  cd "$work/src/tree"
  sim_opts=""
  if [ "$flavour" = simgrid ]; then
    log "building StarPU $version for SimGrid simulation into $prefix"
    cuda_opts="--disable-cuda"
    sim_opts="--enable-simgrid"
  elif [ -n "$cuda_dir" ]; then
    log "building StarPU $version with CUDA ($cuda_dir) into $prefix"
    patch -p1 -s <"$here/patches/starpu-1.4-cuda13.patch" ||
      { echo "setup: patches/starpu-1.4-cuda13.patch does not apply to StarPU $version" >&2; exit 1; }
    cuda_opts="--enable-cuda --with-cuda-dir=$cuda_dir"
  else
    log "building StarPU $version (no CUDA toolkit found) into $prefix"
    cuda_opts="--disable-cuda"
  fi
  mkdir build && cd build
  # shellcheck disable=SC2086
  ../configure --prefix="$prefix" CFLAGS="-O2 -g0" $cuda_opts $sim_opts \
    --enable-opencl --with-fxt --enable-maxcpus=64 --enable-maxnodes=16 \
    --disable-static --disable-build-doc --disable-build-examples --disable-build-tests \
    --disable-starpufft --disable-mpi --disable-fortran --disable-glpk --disable-starpupy \
    --disable-openmp --disable-papi --disable-socl --disable-starpurm --disable-hdf5 \
    --disable-leveldb --disable-opengl-render --enable-blas-lib=none >configure.log 2>&1 ||
    { tail -n 30 configure.log >&2; exit 1; }
  make -j"$jobs" >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
  make install >install.log 2>&1 || { tail -n 20 install.log >&2; exit 1; }
  echo "$version" > "$prefix/.ditstar-starpu-version"
  echo "$flavour" > "$prefix/.ditstar-starpu-flavour"
  cd "$here"
}

# A build is reused when it has the CUDA driver exactly when a toolkit is there.
have_flavour=$(cat "$prefix/.ditstar-starpu-flavour" 2>/dev/null || echo nocuda)
if [ -f "$prefix/.ditstar-starpu-version" ] && [ -f "$prefix/lib/pkgconfig/starpu-1.4.pc" ] &&
   [ "$have_flavour" = "$want_flavour" ]; then
  log "StarPU $(cat "$prefix/.ditstar-starpu-version") ($have_flavour) already built in $prefix"
else
  if [ -f "$prefix/.ditstar-starpu-version" ]; then
    log "rebuilding StarPU: the build in $prefix is $have_flavour, this machine wants $want_flavour"
    rm -rf "$prefix"
  fi
  (build_starpu "$prefix" "$want_flavour")
fi
sim_prefix=$prefix-simgrid
if [ "${1:-}" = simgrid ]; then
  if [ -f "$sim_prefix/.ditstar-starpu-version" ] && [ -f "$sim_prefix/lib/pkgconfig/starpu-1.4.pc" ]; then
    log "StarPU $(cat "$sim_prefix/.ditstar-starpu-version") (simgrid) already built in $sim_prefix"
  else
    (build_starpu "$sim_prefix" simgrid)
  fi
fi

mode=${1:-build}
case $mode in
  --deps) exit 0 ;;
  build|run|check|simgrid) ;;
  *) echo "usage: ./setup.sh [run|check|simgrid|--deps|tools [check]]" >&2; exit 2 ;;
esac

cd "$here"
[ -x configure ] || autoreconf -fi >/dev/null 2>&1
# simgrid: (re)configure with the second prefix unless this build already has it
if [ "$mode" = simgrid ] && [ -f Makefile ] && ! grep -q '^STARPU_SIM_LIBS = .' Makefile; then
  rm -f Makefile
fi
if [ ! -f Makefile ]; then
  log "configuring"
  cuda_flag=--without-cuda
  [ -n "$cuda_dir" ] && cuda_flag=--with-cuda="$cuda_dir"
  sim_flag=
  [ "$mode" = simgrid ] && sim_flag=--with-starpu-simgrid="$sim_prefix"
  # shellcheck disable=SC2086 # sim_flag: nothing or one word
  ./configure --with-starpu="$prefix" "$cuda_flag" $sim_flag >config.out 2>&1 ||
    { tail -n 30 config.out >&2; exit 1; }
  sed -n '/^ditstar .* configuration$/,$p' config.out
fi
log "building"
make -j"$jobs" >/dev/null

case $mode in
  simgrid)
    log "built ./ditstar-sim (SimGrid: docs/traces.md, 'Simulating a run')" ;;
  run)
    exec ./ditstar generate ;;
  check)
    rc=0
    make -j"$jobs" check >check.out 2>&1 || rc=$?
    grep -E '^(ok|not ok|PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):? ' check.out | grep -Ev '^(ok|PASS)' || true
    [ "$rc" -ne 0 ] && { sh "$here/tests/show-failures.sh" . || true; }
    pass=$(sed -n 's/^# PASS: *//p' test-suite.log 2>/dev/null | head -n 1)
    failed=$(sed -n 's/^# FAIL: *//p' test-suite.log 2>/dev/null | head -n 1)
    errors=$(sed -n 's/^# ERROR: *//p' test-suite.log 2>/dev/null | head -n 1)
    skipped=$(sed -n 's/^# SKIP: *//p' test-suite.log 2>/dev/null | head -n 1)
    if [ -z "$pass" ]; then
      tail -n 30 check.out >&2
      pass=0
      failed=1
    fi
    [ "$rc" -ne 0 ] && [ "${failed:-0}" -eq 0 ] && [ "${errors:-0}" -eq 0 ] && errors=1
    echo "${pass} passed, $(( ${failed:-0} + ${errors:-0} )) failed, ${skipped:-0} skipped"
    exit $rc ;;
esac

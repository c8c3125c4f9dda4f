#!/bin/sh
# Packs a built ditstar into a self-contained folder for a machine that has none of
# our Debian packages (the GPU machine of perf/gpu-check.sh): the real binaries, the
# library, StarPU and every shared library they need that is not glibc's or CUDA's.
#
#     perf/pack-device.sh BUNDLE_DIR [BUILD_DIR]
#
# BUILD_DIR is the top build folder (the one holding libditstar.la and config.status);
# default: the current folder or the first parent that is one. BUNDLE_DIR is emptied
# and receives:
#
#     bin/        ditstar, bench_cuda_ops, bench_cuda_libs, test_cuda_kernels,
#                 test_cuda_ops, test_cuda_libs (those that are built; the real files
#                 from .libs/, not the libtool wrappers), stripped
#     lib/        libditstar, libstarpu-1.4 and their non-system dependencies, each
#                 under its soname, stripped; libraries over 1 MiB as NAME.xz
#     lib/fallback/  libstdc++ and libgcc_s: to be used only where the system has none
#     perf/       gpu-check.sh, sweep-cuda, act-check, bench_sdpa.py, peer_wan_block.py,
#                 bench-coexec
#     MANIFEST    what was packed, from where, sizes
#
# Left out on purpose: glibc (libc, libm, libpthread, libdl, librt, ld-linux, ...) and
# CUDA's libraries (libcuda, libcudart, libcublas, libcublasLt, libnvidia-*): the device
# has its own, matching its driver. Before compressing, the bundle is checked from a
# clean environment (env -i): every library must resolve into it or be one of those
# system ones, and `ditstar info` must run. Fails if the bundle is over 60 MiB (what a
# device call may carry is 64 MiB with the working tree). On the device,
# perf/gpu-check.sh copies the bundle to scratch space and decompresses it there.
set -eu

max_mib=60
xz_over=1048576 # bytes: bigger libraries travel xz-compressed

die() {
	echo "pack-device: $*" >&2
	exit 1
}

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: pack-device.sh BUNDLE_DIR [BUILD_DIR]"
bundle=$1
here=$(cd "$(dirname "$0")" && pwd) # perf/ of the source tree: the scripts to pack

# The top build folder: given, or the current folder or a parent holding the library.
if [ $# -eq 2 ]; then
	build=$(cd "$2" && pwd)
else
	build=$(pwd)
	while [ ! -f "$build/libditstar.la" ] && [ "$build" != / ]; do
		build=$(dirname "$build")
	done
fi
[ -f "$build/libditstar.la" ] && [ -f "$build/config.status" ] ||
	die "no built tree (libditstar.la, config.status) at or above $(pwd); run make first or give BUILD_DIR"
[ -d "$build/.libs" ] || die "$build/.libs: missing (is the library built?)"
for tool in ldd strip objdump; do
	command -v $tool >/dev/null 2>&1 || die "$tool: not found"
done

# StarPU's libdir: the -L of the STARPU_LIBS this tree was linked with, else pkg-config.
starpu_libdir=$(sed -n 's/^STARPU_LIBS = //p' "$build/Makefile" | tr ' ' '\n' | sed -n 's/^-L//p' | head -n 1)
if [ -z "$starpu_libdir" ]; then
	PKG_CONFIG_PATH=${PKG_CONFIG_PATH:+$PKG_CONFIG_PATH:}${DITSTAR_STARPU_PREFIX:-$HOME/.local/ditstar/starpu-1.4}/lib/pkgconfig
	export PKG_CONFIG_PATH
	starpu_libdir=$(pkg-config --variable=libdir starpu-1.4) || die "StarPU 1.4: not found by pkg-config"
fi
[ -d "$starpu_libdir" ] || die "$starpu_libdir: StarPU's library folder is missing"

# The real executable behind a libtool wrapper: .libs/NAME (or .libs/lt-NAME), else
# NAME itself when it is already an ELF file. Prints nothing when not built.
real_binary() {
	d=$(dirname "$1") n=$(basename "$1")
	for f in "$d/.libs/$n" "$d/.libs/lt-$n" "$1"; do
		if [ -f "$f" ] && [ "$(head -c 4 "$f" | tail -c 3)" = ELF ]; then
			echo "$f"
			return
		fi
	done
}

# Libraries the device provides itself: glibc's and CUDA's (and the driver's).
is_system_lib() {
	case $1 in
	linux-vdso.so* | ld-linux*.so* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
		librt.so.* | libutil.so.* | libresolv.so.* | libanl.so.* | libmvec.so.* | libnsl.so.* | \
		libBrokenLocale.so.* | libcrypt.so.* ) return 0 ;;
	libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | libnvidia-* | libnvrtc* | \
		libnvJitLink* | libcufile* | libcupti* | libcusparse.so* | libcusolver.so* | \
		libcufft.so* | libcurand.so* | libnvToolsExt.so* | libnvblas.so* | libnpp*.so* ) return 0 ;;
	*) return 1 ;;
	esac
}

# libstdc++ and libgcc_s: taken from the system where it has them (ours are older than
# most), from lib/fallback otherwise.
is_fallback_lib() {
	case $1 in libstdc++.so.* | libgcc_s.so.*) return 0 ;; *) return 1 ;; esac
}
has_system_libstdcxx() {
	{ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libstdc++\.so\.6 '
}

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib/fallback" "$bundle/perf"
bundle=$(cd "$bundle" && pwd)
manifest=$bundle/MANIFEST
{
	echo "# ditstar device bundle"
	echo "packed:   $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n)"
	echo "build:    $build"
	echo "source:   $(git -C "$here" describe --always --dirty 2>/dev/null || echo '?')"
	echo "starpu:   $starpu_libdir"
} >"$manifest"

# 1. The binaries.
nbin=0
for prog in ditstar perf/bench_cuda_ops perf/bench_cuda_libs tests/test_cuda_kernels tests/test_cuda_ops \
	tests/test_cuda_libs; do
	f=$(real_binary "$build/$prog")
	if [ -z "$f" ]; then
		echo "pack-device: $prog: not built, left out"
		echo "missing:  $prog (not built)" >>"$manifest"
		continue
	fi
	cp "$f" "$bundle/bin/$(basename "$prog")"
	nbin=$((nbin + 1))
done
[ -f "$bundle/bin/ditstar" ] || die "ditstar: not built in $build"

# 2. libditstar under its soname, then everything ldd resolves for the binaries and
#    the libraries, found with the build's own paths.
lib_ditstar=$(ls "$build"/.libs/libditstar.so.*.*.* 2>/dev/null | head -n 1)
[ -n "$lib_ditstar" ] || die "$build/.libs/libditstar.so.*: missing"
soname=$(objdump -p "$lib_ditstar" | awk '$1 == "SONAME" { print $2 }')
cp "$lib_ditstar" "$bundle/lib/$soname"
search=$build/.libs:$starpu_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
deps=$bundle/.deps.txt
: >"$deps"
for f in "$bundle"/bin/* "$bundle/lib/$soname"; do
	LD_LIBRARY_PATH=$search ldd "$f" >>"$deps" 2>/dev/null || true
done
missing=""
for name in $(awk '$2 == "=>" { print $1 }' "$deps" | sort -u); do
	if is_system_lib "$name" || [ "$name" = "$soname" ]; then
		continue
	fi
	path=$(awk -v n="$name" '$1 == n && $2 == "=>" { print $3; exit }' "$deps")
	if [ "$path" = "not" ] || [ ! -f "$path" ]; then
		missing="$missing $name"
		continue
	fi
	if is_fallback_lib "$name"; then
		cp -L "$path" "$bundle/lib/fallback/$name"
	else
		cp -L "$path" "$bundle/lib/$name"
	fi
done
rm -f "$deps"
[ -z "$missing" ] || die "needed but not found here:$missing"

# 3. Strip everything (ELF files only; a library that strip refuses stays as it is).
for f in "$bundle"/bin/* "$bundle"/lib/*.so* "$bundle"/lib/fallback/*; do
	[ -f "$f" ] || continue
	chmod u+w "$f"
	strip --strip-unneeded "$f" 2>/dev/null || echo "pack-device: strip refused $(basename "$f"), kept"
done

# 4. The scripts the device check runs.
for s in gpu-check.sh sweep-cuda act-check bench_sdpa.py peer_wan_block.py bench-coexec; do
	[ -f "$here/$s" ] || die "$here/$s: missing"
	cp "$here/$s" "$bundle/perf/$s"
done
chmod +x "$bundle/perf/gpu-check.sh" "$bundle/perf/sweep-cuda" "$bundle/perf/act-check" \
	"$bundle/perf/bench-coexec"

# 5. Check from a clean environment: every library of every binary resolves into the
#    bundle or is a system one, and ditstar runs.
libpath=$bundle/lib
has_system_libstdcxx || libpath=$libpath:$bundle/lib/fallback
bad=""
for f in "$bundle"/bin/*; do
	out=$(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$libpath" ldd "$f" 2>&1) ||
		bad="$bad $(basename "$f"):ldd-failed"
	for name in $(echo "$out" | awk '$2 == "=>" { print $1 }'); do
		p=$(echo "$out" | awk -v n="$name" '$1 == n { print $3; exit }')
		case $p in "$bundle"/*) continue ;; esac
		if ! is_system_lib "$name" && ! is_fallback_lib "$name"; then
			bad="$bad $(basename "$f"):$name=>$p"
		fi
	done
done
[ -z "$bad" ] || die "libraries not taken from the bundle:$bad"
env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$libpath" "$bundle/bin/ditstar" info --model tiny >/dev/null ||
	die "ditstar info fails from the bundle (env -i LD_LIBRARY_PATH=$libpath $bundle/bin/ditstar info --model tiny)"
echo "pack-device: checked: env -i LD_LIBRARY_PATH=$libpath bin/ditstar info --model tiny"

# 6. Compress the big libraries (gpu-check.sh decompresses a copy on the device).
raw=$(du -sbL "$bundle" | cut -f 1)
if command -v xz >/dev/null 2>&1; then
	for f in "$bundle"/lib/*.so* "$bundle"/lib/fallback/*; do
		[ -f "$f" ] || continue
		if [ "$(wc -c <"$f")" -gt $xz_over ]; then
			xz -T0 -3 "$f"
		fi
	done
else
	echo "pack-device: xz not found: libraries left uncompressed"
fi

# 7. Manifest and size.
{
	echo "binaries: $nbin"
	echo
	echo "# bytes  file (.xz: compressed; gpu-check.sh decompresses a copy)"
	(cd "$bundle" && find . -type f ! -name MANIFEST | sort | while read -r f; do
		printf '%10d  %s\n' "$(wc -c <"$f")" "${f#./}"
	done)
} >>"$manifest"
total=$(du -sb "$bundle" | cut -f 1)
awk -v b="$bundle" -v n="$(find "$bundle" -type f | wc -l)" -v t="$total" -v r="$raw" 'BEGIN {
	printf "pack-device: %s: %d files, %.1f MiB (%.1f MiB before compression)\n", b, n, t / 1048576, r / 1048576 }'
[ "$total" -le $((max_mib * 1048576)) ] || die "bundle is over $max_mib MiB"

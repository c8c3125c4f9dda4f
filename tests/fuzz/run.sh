#!/bin/sh
# Builds the libFuzzer targets with ASan and UBSan and runs each for SECONDS on a copy
# of its seed corpus. Prints the executions and the outcome per target; exits non-zero
# when a target crashes (the crashing input is kept in the work directory).
#
#   tests/fuzz/run.sh SECONDS [TARGET...]
#
# Targets (default: all seven): fuzz_safetensors, fuzz_config, fuzz_index (the shard index
# json), fuzz_archive (tar, tar.gz, tar.zst and zip archives, read from memory),
# fuzz_pickle (the restricted pickle reader), fuzz_ptzip (PyTorch .pt checkpoints) and
# fuzz_gguf (GGUF files).
#
# Environment: CC (default: clang, else clang-15 or clang-14) and FUZZ_WORK (the work
# directory, default: a new one under ${TMPDIR:-/tmp}). Needs clang with its libFuzzer
# runtime (Debian: clang libclang-rt-dev), libjson-c and libarchive.
set -eu

usage() {
	echo "usage: $0 SECONDS [fuzz_safetensors|fuzz_config|fuzz_index|fuzz_archive|fuzz_pickle|fuzz_ptzip|fuzz_gguf ...]" >&2
	exit 2
}
[ $# -ge 1 ] || usage
secs=$1
shift
case $secs in '' | *[!0-9]*) usage ;; esac

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
targets=${*:-"fuzz_safetensors fuzz_config fuzz_index fuzz_archive fuzz_pickle fuzz_ptzip fuzz_gguf"}

if [ -z "${CC:-}" ]; then
	for c in clang clang-15 clang-14; do
		if command -v "$c" >/dev/null 2>&1; then
			CC=$c
			break
		fi
	done
fi
[ -n "${CC:-}" ] || {
	echo "run.sh: clang not found (install clang and libclang-rt-dev)" >&2
	exit 2
}
work=${FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/dit-fuzz.XXXXXX")}
mkdir -p "$work"

common="$top/common/dit_error.c $top/src/formats/dit_input.c"
# the families' config keys: every model file (the registry names every family)
models=$(echo "$top"/models/*.c)
flags="-std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -Wall -Wextra -Werror
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -fno-omit-frame-pointer -I$top/common -I$top/src/formats -I$top/src/checkpoint -I$top/models"

# the safetensors reader's tensor reads and writer
st_more="$top/src/formats/dit_st_header.c $top/src/formats/dit_st_read.c $top/src/formats/dit_st_scale.c $top/src/formats/dit_st_writer.c"
# the restricted pickle reader
pickle="$top/src/formats/dit_pickle.c $top/src/formats/dit_pk_torch.c"
status=0
for t in $targets; do
	case $t in
	fuzz_safetensors) srcs="$common $top/src/formats/dit_io.c $top/src/formats/dit_safetensors.c $st_more" ;;
	fuzz_pickle) srcs="$common $top/src/formats/dit_io.c $pickle" ;;
	fuzz_ptzip)
		srcs="$common $top/src/formats/dit_io.c $top/src/formats/dit_safetensors.c $st_more $pickle
		  $top/src/formats/dit_zip.c $top/src/formats/dit_pt.c"
		;;
	fuzz_gguf) srcs="$common $top/src/formats/dit_io.c $top/src/formats/dit_safetensors.c $st_more $top/src/formats/dit_gguf.c" ;;
	fuzz_config) srcs="$common $top/src/formats/dit_io.c $top/src/checkpoint/dit_config.c $top/src/checkpoint/dit_config_keys.c $models" ;;
	fuzz_index | fuzz_archive)
		# the index parser lives with the checkpoint loader, which reads archives too
		srcs="$common $top/src/formats/dit_io.c $top/src/checkpoint/dit_config.c $top/src/checkpoint/dit_config_keys.c $top/src/formats/dit_safetensors.c
		  $st_more $top/src/formats/dit_archive.c $top/src/formats/dit_archive_data.c
		  $top/src/checkpoint/dit_checkpoint.c $top/src/checkpoint/dit_ck_find.c $top/src/checkpoint/dit_ck_index.c $top/src/checkpoint/dit_ck_pt.c \
		  $top/src/checkpoint/dit_ck_file.c $top/src/formats/dit_gguf.c $pickle
		  $top/src/formats/dit_zip.c $top/src/formats/dit_pt.c $models"
		;;
	*) echo "run.sh: unknown target $t" >&2; exit 2 ;;
	esac
	# shellcheck disable=SC2086
	if ! $CC $flags -o "$work/$t" "$here/$t.c" $srcs -ljson-c -larchive -lm 2>"$work/$t.build.log"; then
		cat "$work/$t.build.log" >&2
		echo "$t: build failed"
		status=1
		continue
	fi
	rm -rf "$work/$t.corpus" "$work/$t.artifacts"
	mkdir -p "$work/$t.corpus" "$work/$t.artifacts"
	cp "$here/corpus/$t/"* "$work/$t.corpus/"
	rc=0
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$work/$t" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 \
		-artifact_prefix="$work/$t.artifacts/" "$work/$t.corpus" \
		>"$work/$t.log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log" |
		awk '{s += $1} END {print s + 0}')
	crashes=$(find "$work/$t.artifacts" -type f | wc -l)
	if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
		echo "$t: $execs executions in ${secs}s, CRASH (exit $rc), inputs in $work/$t.artifacts, log $work/$t.log"
		grep -m 5 -E "ERROR: |runtime error:|SUMMARY" "$work/$t.log" || true
		status=1
	else
		echo "$t: $execs executions in ${secs}s, no crash"
	fi
done
exit $status

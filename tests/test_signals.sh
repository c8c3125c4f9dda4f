# Signals at every stage of a run, table-driven: SIGINT or SIGTERM sent (by a preloaded
# hook, tests/sig_at.c, not by timing) the moment ditstar opens the checkpoint, writes
# the chunk store, saves the resume state, or syncs an output (latents, stats, preview,
# a trace file). Each run ends with exit 130 and one line on stderr; no temporary file
# is left next to an output, an output in flight keeps its previous contents, a store
# cut short has no manifest and the next run completes it, a state saved when the
# signal came resumes to the latents of a run never stopped.
. "$top_srcdir/tests/lib.sh"
need_python
skip_if_sanitized ditstar "the preloaded hook and ASan's runtime exclude each other"
T=$(scratch signals)
SIGAT="$top_builddir/tests/.libs/libsigat.so"
[ -e "$SIGAT" ] || { echo "Bail out! $SIGAT not built"; exit 1; }

G="$DITSTAR generate --model tiny --cache-dir $T/cache --steps 3 --quiet"
$G --output "$T/ref" 2>"$T/err" || sed 's/^/# /' "$T/err" # the preset made, once

# The stages: name, the hook's CALL:SIGNAL:PATTERN, the options of the run (what the
# stage must leave is checked below by name). Chunks and outputs are written under a
# temporary name, synced, then renamed: the sync is the middle of their writing.
STAGES='
load	open:INT:*/cache/*/*.safetensors	-
store	fsync:TERM:*/store/blocks.bin.tmp.*	--offload disk --disk-source store --offload-dir STORE
state	fsync:INT:*/state.tmp.*	--state STATE
output	fsync:TERM:*/out.tmp.*	-
stats	fsync:INT:*/stats.json.tmp.*	--stats-json STATS
preview	fsync:TERM:*/preview.png.tmp.*	--preview PREVIEW
trace	fsync:INT:*/trace/trace/*.tmp.*	--trace TRACE
'
plan $(($(echo "$STAGES" | grep -c .) + 3))

# the run: PREVIOUS in every output beforehand (an output in flight must keep it)
run_stage() {
	name=$1 at=$2
	shift 2
	d="$T/$name"
	rm -rf "$d" && mkdir -p "$d"
	for f in out stats.json preview.png; do echo previous >"$d/$f"; done
	args=$(echo "$*" | sed "s#^-\$##; s#STORE#$d/store#; s#STATE#$d/state#; s#STATS#$d/stats.json#;
		s#PREVIEW#$d/preview.png#; s#TRACE#$d/trace#")
	# shellcheck disable=SC2086
	timeout 120 env LD_PRELOAD="$SIGAT" DIT_SIG_AT="$at" DIT_SIG_AT_MARK="$d/mark" \
		$G $args --output "$d/out" >/dev/null 2>"$d/err"
	rc=$?
}

# left NAME: what the stage must leave, beyond the common checks; prints what is wrong
left() {
	d="$T/$1"
	case $1 in
	store) [ -e "$d/store/manifest.json" ] && echo "a manifest written for a store cut short" ;;
	state)
		grep -q "interrupted after step [0-9] of 3; state saved in $d/state" "$d/err" ||
			echo "no 'state saved' line"
		[ -s "$d/state" ] || echo "no state"
		;;
	esac
	case $1 in
	state | stats | preview | trace) ;; # stops after the step, or with the output in place
	*) [ "$(cat "$d/out")" = previous ] || echo "the output was replaced" ;;
	esac
	case $1 in
	stats) [ "$(cat "$d/stats.json")" = previous ] || echo "the stats replaced" ;;
	preview) [ "$(cat "$d/preview.png")" = previous ] || echo "the preview replaced" ;;
	esac
	tmps=$(find "$d" -name '*.tmp.??????')
	[ -z "$tmps" ] || echo "temporary files left: $tmps"
}

# with --state the first signal says the run stops after its step, then where the
# state is: two lines
echo "$STAGES" | grep . >"$T/stages"
while IFS='	' read -r name at opts; do
	run_stage "$name" "$at" "$opts"
	wrong=$(left "$name")
	[ -e "$T/$name/mark" ] || wrong="$wrong; the signal was never sent (stage not reached)"
	lines=1
	[ "$name" = state ] && lines=2
	if [ $rc -eq 130 ] && [ "$(wc -l <"$T/$name/err")" -eq $lines ] && [ -z "$wrong" ]; then
		ok "a signal while $name: exit 130, $lines line(s), nothing left behind"
	else
		fail "a signal while $name: rc $rc, $(wc -l <"$T/$name/err") lines; $wrong"
		sed 's/^/# /' "$T/$name/err"
	fi
done <"$T/stages"

# what comes after: the store completed, the state resumed, both to the same latents
$G --offload disk --disk-source store --offload-dir "$T/store/store" --output "$T/after_store" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
identical "the store cut short is completed by the next run: same latents" "$T/ref" "$T/after_store"
$G --resume "$T/state/state" --output "$T/after_state" 2>"$T/err" || sed 's/^/# /' "$T/err"
identical "the state saved under the signal resumes: same latents" "$T/ref" "$T/after_state"
check "no temporary file in the checkpoint's folder" sh -c "! ls -R '$T/cache' | grep -q '\.tmp\.'"
finish

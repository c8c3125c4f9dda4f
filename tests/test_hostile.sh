# The systematic hostile suite of path arguments: every option of `generate`, `forward`,
# `plan`, `calibrate` and `info` that takes a FILE or a DIR (read from their --help, so that a new one cannot
# be missed: an option the table below does not know fails the suite) against a FIFO, a
# device (/dev/null), a dangling symbolic link, a folder where a file belongs and a file
# where a folder belongs. Each run ends (no hang: a 60 s timeout), exits 1 or 2 with one
# line on stderr naming the path or the option, and leaves the special file as it was.
# Outputs naming an input are refused, the input intact. Every other option that takes a
# value, given a negative, a word, an overflowing or an empty one: exit 2, one line
# naming the option. The files ditstar reads from its cache (a preset's checkpoint, a chunk
# store's files) as FIFOs, folders, garbage, cut short or dangling links: rewritten or named.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch hostile)

# the options and how they are used: input or output, file or folder, the command
role() {
	case $1 in
	noise | context | resume | image-latent | condition-latent | lora) echo in-file generate ;;
	inputs) echo in-file forward ;;
	model-dir) echo in-dir generate ;;
	output | stats-json | preview | state) echo out-file generate ;;
	trace | offload-dir | cache-dir) echo out-dir generate ;;
	sim-roofline) echo sim generate ;;
	*) echo unknown ;;
	esac
}

opts=$( ("$DITSTAR" generate --help; "$DITSTAR" forward --help) 2>&1 | "$PYTHON_NUMPY" -c "
import re, sys
print(' '.join(sorted(set(re.findall(r'--([a-z0-9-]+)\s+(?:FILE|DIR)\b', sys.stdin.read())))))")
n=0
for o in $opts; do
	set -- $(role "$o")
	case $1 in in-file | out-file) n=$((n + 4)) ;; in-dir | out-dir) n=$((n + 4)) ;; sim) ;; *) n=$((n + 1)) ;; esac
done
# plan, calibrate and info take paths too (their --help): the same cases through them
pathopts() {
	"$DITSTAR" "$1" --help 2>&1 | "$PYTHON_NUMPY" -c "
import re, sys
print(' '.join(sorted(set(re.findall(r'--([a-z0-9-]+)\s+(?:FILE|DIR)\b', sys.stdin.read())))))"
}
for cmd in plan calibrate info; do
	for o in $(pathopts $cmd); do
		set -- $(role "$o")
		case $1 in unknown) n=$((n + 1)) ;; sim) ;; *) n=$((n + 4)) ;; esac
	done
done
vals=$("$DITSTAR" generate --help 2>&1 | "$PYTHON_NUMPY" -c "
import re, sys
t = sys.stdin.read()
print(' '.join(sorted({m.group(1) for m in re.finditer(r'^  --([a-z0-9-]+) (\S+)', t, re.M)
                       if not m.group(2).startswith(('FILE', 'DIR'))})))")
plan $((n + 6 + 8 + 5 + $(echo $vals | wc -w)))

mkfifo "$T/fifo"
ln -s "$T/nothing-here" "$T/dangling"
mkdir -p "$T/adir"
printf 'a file\n' >"$T/afile"
C="--cache-dir $T/cache"
"$DITSTAR" generate --model tiny-test --steps 1 --quiet $C --output "$T/good" 2>/dev/null

# intact KIND PATH: PATH is still what the case made of it
intact() {
	case $1 in
	fifo) [ -p "$2" ] ;;
	dev) [ -c "$2" ] ;;
	dangling) [ -L "$2" ] && [ ! -e "$2" ] ;;
	dir) [ -d "$2" ] && [ -z "$(ls -A "$2")" ] ;;
	file) [ "$(cat "$2")" = "a file" ] ;;
	esac
}

# try OPT ROLE CMD KIND PATH
try() {
	o=$1 r=$2 cmd=$3 kind=$4 p=$5
	extra="--output $T/x.out"
	case $cmd in
	forward) base="$DITSTAR forward --model-dir $T/cache/tiny-test-synth-v1 --inputs $T/good" ;;
	plan) base="$DITSTAR plan --model tiny-test --steps 1" extra= ;;
	calibrate) base="$DITSTAR calibrate --model tiny-test --steps 1 --rounds 1" extra= ;;
	info) base="$DITSTAR info --model tiny-test" extra= ;;
	*) base="$DITSTAR generate --model tiny-test --steps 1 --quiet" ;;
	esac
	case $o in
	output) extra= ;;
	offload-dir) extra="$extra --offload disk" ;;
	esac
	[ "$o" = cache-dir ] || [ "$cmd" = forward ] || [ "$cmd" = info ] || extra="$extra $C"
	[ "$o" = inputs ] && base="$DITSTAR forward --model-dir $T/cache/tiny-test-synth-v1"
	[ "$o" = model-dir ] && base="${base%% --model tiny-test*}${base#* --model tiny-test}"
	[ "$o" = model-dir ] && [ "$cmd" = generate ] && base="$DITSTAR generate --steps 1 --quiet"
	# shellcheck disable=SC2086
	timeout 60 $base $extra --"$o" "$p" >/dev/null 2>"$T/err"
	rc=$?
	lines=$(wc -l <"$T/err")
	if { [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && [ "$lines" -eq 1 ] &&
		{ grep -qF -- "$p" "$T/err" || grep -qF -- "--$o" "$T/err"; } && intact "$kind" "$p"; then
		ok "$cmd --$o ($r) $kind: rc $rc, one line, left as it was"
	else
		fail "$cmd --$o ($r) $kind: rc $rc, $lines stderr lines, intact: $(intact "$kind" "$p" && echo yes || echo no)"
		sed 's/^/# /' "$T/err"
	fi
}

for o in $opts; do
	set -- $(role "$o")
	r=$1 cmd=$2
	case $r in
	in-file | out-file)
		try "$o" "$r" "$cmd" fifo "$T/fifo"
		try "$o" "$r" "$cmd" dev /dev/null
		try "$o" "$r" "$cmd" dangling "$T/dangling"
		try "$o" "$r" "$cmd" dir "$T/adir"
		;;
	in-dir | out-dir)
		try "$o" "$r" "$cmd" fifo "$T/fifo"
		try "$o" "$r" "$cmd" dev /dev/null
		try "$o" "$r" "$cmd" dangling "$T/dangling"
		try "$o" "$r" "$cmd" file "$T/afile"
		;;
	sim) ;; # ditstar-sim's (tests/test_sim.sh)
	*) fail "--$o takes a path and the hostile suite does not know it: add it to role()" ;;
	esac
done

for cmd in plan calibrate info; do
	for o in $(pathopts $cmd); do
		set -- $(role "$o")
		r=$1
		case $r in
		in-file | out-file)
			for k in "fifo $T/fifo" "dev /dev/null" "dangling $T/dangling" "dir $T/adir"; do
				# shellcheck disable=SC2086
				try "$o" "$r" "$cmd" $k
			done
			;;
		in-dir | out-dir)
			for k in "fifo $T/fifo" "dev /dev/null" "dangling $T/dangling" "file $T/afile"; do
				# shellcheck disable=SC2086
				try "$o" "$r" "$cmd" $k
			done
			;;
		sim) ;;
		*) fail "$cmd --$o takes a path and the hostile suite does not know it: add it to role()" ;;
		esac
	done
done

# every option that takes a value other than a path (from generate's --help) given a
# negative, a word, an overflowing and an empty value: a usage error, exit 2, one line
# naming the option (values an option takes are the suites of each option's own)
nv=0
for o in $vals; do
	bad=
	for v in -1 abc 1e99 ""; do
		timeout 60 "$DITSTAR" generate --model tiny-test --steps 1 --quiet $C --output "$T/v.out" \
			--"$o" "$v" >/dev/null 2>"$T/err"
		rc=$?
		if [ $rc -ne 2 ] || [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q -- "$o" "$T/err"; then
			bad="$bad '$v' (rc $rc: $(head -c 100 "$T/err" | head -1))"
		fi
	done
	nv=$((nv + 1))
	if [ -z "$bad" ]; then
		ok "--$o: -1, abc, 1e99 and '' refused, exit 2, one line naming it"
	else
		fail "--$o: taken or not named:$bad"
	fi
done
[ -e "$T/v.out" ] && echo "# a refused run wrote its output"

# outputs naming an input: refused, the input intact
cp "$T/good" "$T/noise"
for o in output stats-json preview state; do
	extra="--output $T/x.out"
	[ $o = output ] && extra=
	# shellcheck disable=SC2086
	timeout 60 "$DITSTAR" generate --model tiny-test --steps 1 --quiet $C --noise "$T/noise" \
		$extra --$o "$T/noise" >/dev/null 2>"$T/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q "an input; refusing to overwrite it" "$T/err" &&
		cmp -s "$T/noise" "$T/good"; then
		ok "--$o naming the --noise input: refused, the input intact"
	else
		fail "--$o naming the --noise input: rc $rc"
		sed 's/^/# /' "$T/err"
	fi
done
# trace summarize's folder argument: the same special files
bad=
for k in "fifo $T/fifo" "dev /dev/null" "dangling $T/dangling" "file $T/afile"; do
	set -- $k
	timeout 60 "$DITSTAR" trace summarize "$2" >/dev/null 2>"$T/err"
	rc=$?
	if { [ $rc -ne 1 ] && [ $rc -ne 2 ]; } || [ "$(wc -l <"$T/err")" -ne 1 ] ||
		! grep -qF -- "$2" "$T/err" || ! intact "$1" "$2"; then
		bad="$bad $1 (rc $rc)"
	fi
done
if [ -z "$bad" ]; then
	ok "trace summarize DIR: FIFO, device, dangling link, file: one line naming it"
else
	fail "trace summarize DIR:$bad"
	sed 's/^/# /' "$T/err"
fi

# the files ditstar reads from its cache (a preset's checkpoint, a chunk store's files),
# each a FIFO, a folder, garbage, cut short or a dangling link: the run ends (no hang)
# with the latents of an intact cache (the file rewritten) or exit 1/2 and one line
# naming the file
CF="$T/cf"
GC="$DITSTAR generate --model tiny-test --steps 1 --quiet --cache-dir $CF --offload disk --disk-source store"
$GC --output "$T/cf.ref" 2>/dev/null
S=$(ls -d "$CF"/chunks/* | head -1)
cp -a "$CF" "$T/cf.bak"
KINDS="fifo dir garbage cut dangling"
# the sanitized build: three kinds (a full run each; the CI's time), the normal one all
sanitized ditstar && KINDS="fifo garbage dangling"
for f in tiny-test-synth-v1/config.json tiny-test-synth-v1/diffusion_pytorch_model.safetensors \
	${S#"$CF"/}/manifest.json ${S#"$CF"/}/records.json ${S#"$CF"/}/blocks.bin \
	${S#"$CF"/}/ditstar-store ${S#"$CF"/}/build.lock ${S#"$CF"/}/use.lock; do
	bad=
	for kind in $KINDS; do
		rm -rf "$CF" && cp -a "$T/cf.bak" "$CF"
		p="$CF/$f"
		spoil "$p" $kind "$T/cf.bak/$f"
		why=$(run_or_name "$T/cf.out" "$T/cf.ref" "$p" $GC) || bad="$bad $kind ($why)"
		rm -f "$T/cf.out"
	done
	if [ -z "$bad" ]; then
		ok "cache file ${f##*/}: $(echo $KINDS | tr " " ,): rewritten or named"
	else
		fail "cache file ${f##*/}:$bad"
	fi
done

# every option of one family (generate --help's family sections: the options no other
# section and the common part list) given to a model of every other family, with a
# value of the right form: exit 2, one line naming the option and its family
"$DITSTAR" generate --help 2>&1 | "$PYTHON_NUMPY" -c "
import re, sys
fam, common, sect = None, set(), {}
for line in sys.stdin.read().splitlines():
    m = re.match(r'(Wan2.2|HunyuanVideo|LTX-2|Cosmos-Predict2.5):', line)
    if m:
        fam = m.group(1)
        sect[fam] = []
        continue
    m = re.match(r'  --([a-z0-9-]+)(?: (\S+))?', line)
    if m and fam:
        sect[fam].append((m.group(1), m.group(2) or ''))
    elif m:
        common.add(m.group(1))
seen = {}
for f, opts in sect.items():
    for o, meta in opts:
        seen.setdefault(o, set()).add(f)
for f, opts in sect.items():
    for o, meta in opts:
        if o not in common and len(seen[o]) == 1:
            print(f, o, meta)
" >"$T/famopts"
value() {
	case $2 in
	FILE) echo "$T/good" ;;
	karras*) echo karras ;;
	LIST*) echo 1 ;;
	B) echo 0.5 ;;
	*) echo 1 ;;
	esac
}
[ -s "$T/famopts" ] || fail "no family option found in generate --help"
for fm in "Wan2.2 tiny-t2v-a14b" "HunyuanVideo tiny-hunyuan" "LTX-2 tiny-ltx2" \
	"Cosmos-Predict2.5 tiny-cosmos" "Wan2.1 tiny"; do
	set -- $fm
	bad= n=0
	while read -r fam o meta; do
		[ "$fam" = "$1" ] && continue
		n=$((n + 1))
		timeout 60 "$DITSTAR" plan --model "$2" $C --"$o" "$(value "$o" "$meta")" \
			>/dev/null 2>"$T/err" </dev/null
		rc=$?
		if [ $rc -ne 2 ] || [ "$(wc -l <"$T/err")" -ne 1 ] ||
			! grep -q -- "--$o is an option of $fam" "$T/err"; then
			bad="$bad --$o (rc $rc: $(head -c 100 "$T/err" | head -1))"
		fi
	done <"$T/famopts"
	if [ -z "$bad" ] && [ $n -gt 0 ]; then
		ok "$1 ($2): the $n options of the other families refused, naming them"
	else
		fail "$1 ($2): options of other families taken or not named ($n tried):$bad"
	fi
done

m=$T/cache/tiny-test-synth-v1/diffusion_pytorch_model.safetensors
cp "$m" "$T/model.bak"
expect_fail "--output naming the checkpoint file: refused" 2 "an input; refusing to overwrite it" \
	"$DITSTAR" generate --model tiny-test --steps 1 --quiet $C --output "$m"
cmp -s "$m" "$T/model.bak" || echo "# the checkpoint changed"
finish

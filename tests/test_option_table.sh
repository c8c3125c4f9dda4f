# The option table (src/cli/dit_cli_options.c) against what is made from it: docs/usage.md's
# options section and docs/ditstar.1 are what the program prints (`make update-docs`
# writes them again), every option and alias the parser takes is in the --help of each
# command that takes it and every option a --help names is one the parser takes, the old
# spellings still parse, a command refuses the options it does not take, and --chunk
# POOL=N sizes the pools and experts it names as the old spellings did.
. "$top_srcdir/tests/lib.sh"
T=$(scratch option_table)
plan 15

# same "description" FILE_IN_TREE GENERATED: ok when they agree, else the diff's start
same() {
	if cmp -s "$2" "$3"; then
		ok "$1"
	else
		fail "$1 (stale: run 'make update-docs')"
		diff -u "$2" "$3" | head -n 20 | sed 's/^/# /'
	fi
}

sed -n '/^<!-- options: begin -->$/,/^<!-- options: end -->$/p' "$top_srcdir/docs/usage.md" \
	>"$T/usage.md"
"$DITSTAR" help --markdown >"$T/gen.md"
same "docs/usage.md's options section is 'ditstar help --markdown'" "$T/usage.md" "$T/gen.md"
"$DITSTAR" help --man >"$T/gen.1"
same "docs/ditstar.1 is 'ditstar help --man'" "$top_srcdir/docs/ditstar.1" "$T/gen.1"
if ! command -v groff >/dev/null 2>&1; then
	ok "the man page formats without a warning # SKIP no groff"
elif groff -man -Tutf8 -ww -z "$T/gen.1" 2>"$T/groff.err" && [ ! -s "$T/groff.err" ]; then
	ok "the man page formats without a warning"
else
	fail "the man page formats without a warning"
	sed 's/^/# /' "$T/groff.err"
fi

# Every entry of the table: "name value|flag cmd,cmd,... alias-of|-".
"$DITSTAR" help --list >"$T/list"
for c in generate plan calibrate forward info; do
	"$DITSTAR" $c --help >"$T/help.$c"
done
# parses NAME KIND CMD: whether CMD's parser knows --NAME (a value error is fine; --help
# after it keeps a command that parses from running)
parses() {
	if [ "$2" = value ]; then
		"$DITSTAR" "$3" "--$1" x --help >/dev/null 2>"$T/err"
	else
		"$DITSTAR" "$3" "--$1" --help >/dev/null 2>"$T/err"
	fi
	! grep -q "unknown option" "$T/err"
}
unknown="" missing=""
while read -r name kind cmds alias; do
	parses "$name" "$kind" "${cmds%%,*}" || unknown="$unknown --$name"
	for c in $(echo "$cmds" | tr , ' '); do
		grep -Eq -- "--$name([^a-z-]|\$)" "$T/help.$c" || missing="$missing $c:--$name"
	done
done <"$T/list"
if [ -z "$unknown" ] && [ "$(wc -l <"$T/list")" -gt 60 ]; then
	ok "the parser takes every option and alias of the table ($(wc -l <"$T/list") entries)"
else
	fail "the parser takes every option and alias of the table: unknown$unknown"
fi
if [ -z "$missing" ]; then
	ok "every option and alias is in the --help of each command that takes it"
else
	fail "every option and alias is in the --help of each command that takes it:$missing"
fi

# Every option a command's --help names is an entry of the table.
cut -d' ' -f1 "$T/list" | sed 's/^/--/' | sort -u >"$T/names"
cat "$T"/help.* | grep -o -- '--[a-z][a-z0-9-]*' | sort -u >"$T/named"
stale=$(comm -23 "$T/named" "$T/names" | tr '\n' ' ')
if [ -z "$stale" ] && [ -s "$T/named" ]; then
	ok "every option a --help names is one the parser takes"
else
	fail "every option a --help names is one the parser takes: not in the table: $stale"
fi

# Every spelling the command took before the table still parses.
old=""
for o in model-dir model cache-dir frames height width steps solver guidance shift seed \
	context output stats-json sched ncpus inputs trace offload offload-chunk-size \
	offload-chunk-size-double offload-chunk-size-single embedded-guidance prefetch \
	passes-in-flight token-chunk ffn-chunk-tokens disk-ram-slots resident-chunks rounds \
	offload-dir device-mem-limit host-mem-limit workers weight-dtype fps stg-blocks \
	video-guidance audio-guidance stg rescale modality-guidance sigmas pass-order schedule \
	condition-latent condition-frames tile-tokens priorities sim-roofline watchdog state \
	resume guidance-high boundary noise image-latent expert load-key preview; do
	parses "$o" value generate || old="$old --$o"
done
for o in save-inputs quiet list dry-run json check-finite help; do
	parses "$o" flag generate || old="$old --$o"
done
if [ -z "$old" ]; then ok "the old spellings parse"; else fail "the old spellings parse:$old"; fi

expect_fail "info refuses a sampling option" 2 "^ditstar info: option --steps does not apply here" \
	"$DITSTAR" info --model tiny --steps 3
expect_fail "calibrate refuses --output, which it never wrote" 2 "option --output does not apply" \
	"$DITSTAR" calibrate --model tiny --output "$T/x"
expect_fail "forward refuses --quiet" 2 "option --quiet does not apply" \
	"$DITSTAR" forward --quiet
check "'ditstar help generate' is 'ditstar generate --help'" \
	sh -c "'$DITSTAR' help generate | cmp -s - '$T/help.generate'"

# --chunk POOL=N: by the pool's name, by the expert's label, and as the old spellings.
P="$DITSTAR plan --model tiny-hunyuan"
$P --chunk double_blocks=2 --chunk single_blocks=4 >"$T/new" 2>&1
$P --offload-chunk-size-double 2 --offload-chunk-size-single 4 >"$T/old" 2>&1
if grep -q '^pool double_blocks (double_blocks): 2 blocks in 1 chunks' "$T/new" &&
	grep -q '^pool single_blocks (single_blocks): 4 blocks in 1 chunks' "$T/new" &&
	cmp -s "$T/new" "$T/old"; then
	ok "--chunk POOL=N sizes each pool, as --offload-chunk-size-double/-single"
else
	fail "--chunk POOL=N sizes each pool, as --offload-chunk-size-double/-single"
	sed 's/^/# /' "$T/new"
fi
$P --chunk 1,4 >"$T/new" 2>&1
$P --offload-chunk-size 1,4 >"$T/old" 2>&1
if grep -q '^pool single_blocks (single_blocks): 4 blocks in 1 chunks' "$T/new" &&
	cmp -s "$T/new" "$T/old"; then
	ok "--chunk N,M is --offload-chunk-size N,M"
else
	fail "--chunk N,M is --offload-chunk-size N,M"
	sed 's/^/# /' "$T/new"
fi
"$DITSTAR" plan --model tiny-t2v-a14b --chunk high=2 --chunk low=4 >"$T/experts" 2>&1
if grep -q '^pool blocks (high): 4 blocks in 2 chunks' "$T/experts" &&
	grep -q '^pool blocks (low): 4 blocks in 1 chunks' "$T/experts"; then
	ok "--chunk high=N --chunk low=M: each expert its own chunk size"
else
	fail "--chunk high=N --chunk low=M: each expert its own chunk size"
	sed 's/^/# /' "$T/experts"
fi
expect_fail "--chunk with a pool the model lacks names its pools" 2 \
	"--chunk foo=2: wan2.2-t2v-a14b has no pool 'foo' \(its pools: blocks, high, low\)" \
	"$DITSTAR" plan --model tiny-t2v-a14b --chunk foo=2
finish

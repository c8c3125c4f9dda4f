# The command line's conventions: no arguments print the overview (exit 2, nothing run);
# --help and --version on every command and tool; "-" as an output is standard output
# (the run's report then on standard error; one output at most; not for the files a run
# rewrites or a folder); the bash completion made from the option table completes
# commands, options, presets, choices and the scheduling policies; --workers auto is the
# CPU without a GPU, and says so.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch conventions)
plan 21

version=$("$DITSTAR" --version)
"$DITSTAR" >"$T/out" 2>"$T/err"
rc=$?
check "no arguments: the overview on standard error, exit 2, nothing run" sh -c \
	"[ $rc -eq 2 ] && [ ! -s '$T/out' ] && grep -q '^usage: ditstar COMMAND' '$T/err'"
bad=
for c in generate plan calibrate forward info "sched list" "trace summarize" help; do
	# shellcheck disable=SC2086
	"$DITSTAR" $c --help >"$T/out" 2>&1 || bad="$bad '$c --help' exits $?;"
	grep -q "usage" "$T/out" || bad="$bad '$c --help' prints no usage;"
	# shellcheck disable=SC2086
	v=$("$DITSTAR" $c --version 2>&1) || bad="$bad '$c --version' exits $?;"
	[ "$v" = "$version" ] || bad="$bad '$c --version' prints '$v';"
done
check "every command: --help (exit 0, its usage) and --version ('$version')${bad:+:$bad}" \
	test -z "$bad"
bad=
for tool in ditstar-encode ditstar-decode ditstar-condition; do
	v=$("$PYTHON_NUMPY" "$top_srcdir/tools/$tool" --version 2>&1) || bad="$bad $tool exits $?;"
	[ "$v" = "$tool ${version#ditstar }" ] || bad="$bad $tool prints '$v';"
done
check "the tools' --version is ditstar's (${version#ditstar })${bad:+:$bad}" test -z "$bad"

G="generate --model tiny --steps 2 --cache-dir $T/cache"
# shellcheck disable=SC2086
"$DITSTAR" $G --output "$T/file" --quiet 2>"$T/err" || sed 's/^/# /' "$T/err"
# shellcheck disable=SC2086
"$DITSTAR" $G --output - >"$T/stdout" 2>"$T/err"
rc=$?
identical "--output -: the latents on standard output, the same bytes as a file's" \
	"$T/file" "$T/stdout"
check "--output -: exit 0, the report on standard error, naming standard output" sh -c \
	"[ $rc -eq 0 ] && grep -q 'written to standard output' '$T/err'"
# shellcheck disable=SC2086
"$DITSTAR" $G --quiet --output "$T/x" --stats-json - >"$T/stats" 2>"$T/err" ||
	sed 's/^/# /' "$T/err"
check "--stats-json -: the statistics on standard output" "$PYTHON_NUMPY" -c "
import json; s = json.load(open('$T/stats')); assert s['command'] == 'generate', s"
# shellcheck disable=SC2086
expect_fail "--output - and --stats-json -: refused, one output per stream" 2 \
	"--stats-json -: standard output is also the --output" \
	"$DITSTAR" $G --output - --stats-json -
# shellcheck disable=SC2086
expect_fail "--state -: refused (rewritten every step)" 2 "--state -: " \
	"$DITSTAR" $G --output "$T/y" --state -
# shellcheck disable=SC2086
expect_fail "--preview -: refused (rewritten every step)" 2 "--preview -: " \
	"$DITSTAR" $G --output "$T/y" --preview -
# shellcheck disable=SC2086
expect_fail "--trace -: refused (a folder)" 2 "--trace -: a folder of files" \
	"$DITSTAR" $G --output "$T/y" --trace -
check "no file named '-' made" test ! -e ./-

# --workers auto, the default: CUDA when a GPU answers, else the CPU (a GPU hidden here)
# shellcheck disable=SC2086
CUDA_VISIBLE_DEVICES= "$DITSTAR" $G --output "$T/w" 2>"$T/err" >"$T/out"
check "--workers auto without a GPU: the CPU cores, said in the report" \
	grep -Eq 'on [0-9]+ CPU workers? \(--workers auto\)' "$T/out"
CUDA_VISIBLE_DEVICES= "$DITSTAR" plan --model tiny --json --cache-dir "$T/cache" >"$T/plan.json" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
CUDA_VISIBLE_DEVICES= "$DITSTAR" plan --model tiny --cache-dir "$T/cache" >"$T/plan.txt" \
	2>"$T/err" || sed 's/^/# /' "$T/err"
check "--workers auto in the plan: cpu, chosen by auto (JSON and text)" "$PYTHON_NUMPY" -c "
import json; j = json.load(open('$T/plan.json'))
assert j['workers'] == 'cpu' and j['workers_auto'] is True, j
assert '--workers cpu (auto),' in open('$T/plan.txt').readline()"
# shellcheck disable=SC2086
"$DITSTAR" $G --workers cpu --output "$T/w" 2>"$T/err" >"$T/out"
check "--workers cpu: the CPU cores, not said to be auto's" sh -c \
	"grep -Eq 'on [0-9]+ CPU workers?, scheduler' '$T/out'"

# where things are: the cache, StarPU's tools (the prefix it was built against), its
# models and bus calibration
"$DITSTAR" --paths >"$T/paths" 2>"$T/err" || sed 's/^/# /' "$T/err"
sed 's/^/# /' "$T/paths"
tools=$(sed -n 's/^StarPU tools   \([^ ]*\) .*/\1/p' "$T/paths")
check "--paths: the cache, StarPU's tools (starpu_fxt_tool, starpu_perfmodel_display there), models and bus" \
	sh -c "grep -q '^cache          ' '$T/paths' && grep -q '^StarPU models  .*sampling' '$T/paths' &&
	grep -q '^StarPU bus     .*bus' '$T/paths' && [ -x '$tools/starpu_perfmodel_display' ]"

# bash completion, from the table
"$DITSTAR" help --completion >"$T/comp.bash"
cat >"$T/try.bash" <<EOF
. '$T/comp.bash'
t() { COMP_WORDS=("\$@"); COMP_CWORD=\$(( \${#COMP_WORDS[@]} - 1 )); _ditstar; echo "\${COMPREPLY[*]}"; }
t '$DITSTAR' gen
t '$DITSTAR' generate --work
t '$DITSTAR' plan --workers c
t '$DITSTAR' info --model tiny-ltx2.
t '$DITSTAR' generate --sched dmd
t '$DITSTAR' forward --ex
complete -p ditstar ditstar-sim
EOF
if command -v bash >/dev/null; then
	bash "$T/try.bash" >"$T/comp.out" 2>&1
	sed 's/^/# /' "$T/comp.out"
	check "completion: commands" sed -n '1{/^generate$/!q1}' "$T/comp.out"
	check "completion: a command's options" sed -n '2{/^--workers$/!q1}' "$T/comp.out"
	check "completion: a choice's values" sed -n '3{/^cpu cuda$/!q1}' "$T/comp.out"
	check "completion: the presets" sed -n '4{/^tiny-ltx2.3 tiny-ltx2.5$/!q1}' "$T/comp.out"
	check "completion: StarPU's policies, from the command" grep -q '^dmda .*dmdas' \
		"$T/comp.out"
	check "completion: a family's own options, for both programs" sh -c \
		"sed -n 6p '$T/comp.out' | grep -qx -- --expert &&
		 grep -q 'complete -F _ditstar ditstar-sim' '$T/comp.out'"
else
	for i in 1 2 3 4 5 6; do ok "# SKIP no bash"; done
fi
finish

# `ditstar sched list` marks the schedulers that read priorities, those that place tasks
# by performance models and the default; the priorities mark is checked against every
# policy as StarPU starts it (a run asking for --priorities critical-path: the range the
# stats report is wider than one value exactly for the marked ones), and a run on an
# unmarked one says, in one line, that the scheme changes nothing.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch sched_list)
plan 4

"$DITSTAR" sched list >"$T/list" 2>"$T/err" || sed 's/^/# /' "$T/err"
check "the default (dmda) is marked, with its models, and dmdas reads priorities" sh -c \
	"grep -Eq '^dmda +default models ' '$T/list' && grep -Eq '^dmdas +priorities models ' '$T/list'"
bad= warned= silent=
while read -r name rest; do
	marked=0
	case " $rest " in *" priorities "*) marked=1 ;; esac
	# (Under LeakSanitizer some of StarPU's policies report their own leaks, with no
	# ditstar frame in the stacks (modular-ws: starpu_st_prio_deque_push_front_task):
	# leak checking is off for these runs, memory errors still checked.)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		"$DITSTAR" generate --model tiny --steps 1 --quiet --sched "$name" \
		--priorities critical-path --cache-dir "$T/cache" --stats-json "$T/s.json" \
		--output "$T/x" 2>"$T/err" || { bad="$bad $name (failed: $(grep -v "warning:" "$T/err" | head -n 1))"; continue; }
	wide=$("$PYTHON_NUMPY" -c "import json; p = json.load(open('$T/s.json'))['priorities']
print(int(p['min'] < p['max']))")
	[ "$wide" = "$marked" ] || bad="$bad $name (marked $marked, range wider $wide)"
	if grep -q "takes no priorities" "$T/err"; then
		[ "$marked" = 0 ] || bad="$bad $name (warned though marked)"
		warned="$warned $name"
	else
		[ "$marked" = 1 ] || silent="$silent $name"
	fi
done <"$T/list"
check "the priorities mark is what every policy does once started${bad:+:$bad}" test -z "$bad"
check "a scheme asked for where it changes nothing: said (${warned# })${silent:+; silent:$silent}" \
	test -z "$silent" -a -n "$warned"
expect_fail "the warning is one line naming the option, the scheduler and its range" 0 \
	"^ditstar: warning: --priorities critical-path: scheduler eager takes no priorities \\(its range is \\[0, 0\\], the top kept for the weight transfers\\)" \
	"$DITSTAR" generate --model tiny --steps 1 --quiet --sched eager --priorities critical-path \
	--cache-dir "$T/cache" --output "$T/x"
finish

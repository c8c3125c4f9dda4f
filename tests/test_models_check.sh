# The performance-model check in a process started fresh (tests/test_models_check.c):
# models written by a tiny run in a private StarPU home, a copy with one model cut
# short, then the check run against both while other threads hold locks.
. "$top_srcdir/tests/lib.sh"
T=$(scratch models_check)
G="$DITSTAR generate --model tiny-test --steps 1 --quiet --cache-dir $T/cache --output $T/o"
env STARPU_HOME="$T/good" $G 2>"$T/err" || sed 's/^/# /' "$T/err"
m=$(ls "$T"/good/.starpu/sampling/codelets/*/dit_linear.* 2>/dev/null | head -n 1)
if [ -z "$m" ]; then
	echo "Bail out! the tiny run wrote no performance model in $T/good"
	exit 1
fi
cp -r "$T/good" "$T/bad"
cut=$T/bad/${m#"$T/good/"}
head -c 200 "$m" >"$cut"
exec "$top_builddir/tests/test_models_check" "$(real_bin ditstar-models-check)" \
	"$T/good" "$T/bad" "$cut" "$T"

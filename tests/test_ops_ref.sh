# Single CPU kernels against the float64 NumPy references of tests/ref/ops_ref.py:
# tests/ops_dump runs each case on random inputs (rows padded by a NaN that must stay
# unread and unwritten), ops_ref.py check compares, max |c - ref| / max |ref| <= 1e-5.
# Cases: attention over the first lk_valid of lk keys (the others NaN), RMSNorm per
# group of features, layernorm and residual with per-row modulation tables, RoPE with
# theta and the axis split as parameters.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch ops_ref)
opsref() { "$PYTHON_NUMPY" "$top_srcdir/tests/ref/ops_ref.py" "$@"; }

# NAME OP parameters (ops_ref.py make: sizes, then what ops_dump reads)
cat >"$T/cases" <<'EOF'
att_valid77 attention lq=40 lk=300 lk_valid=77 heads=2 hd=16 pad=3
att_all600 attention lq=7 lk=600 lk_valid=600 heads=1 hd=64
att_one attention lq=130 lk=70 lk_valid=1 heads=2 hd=8 pad=1
att_valid257 attention lq=33 lk=512 lk_valid=257 heads=3 hd=32
att_odd attention lq=19 lk=45 lk_valid=45 heads=5 hd=12 pad=2
att_wan attention lq=257 lk=300 lk_valid=256 heads=2 hd=128
rms_head128 rmsnorm_group rows=7 dim=384 group=128 eps=1e-6 pad=3
rms_g16 rmsnorm_group rows=33 dim=96 group=16 eps=1e-6
rms_noweight rmsnorm_group rows=5 dim=130 group=26 eps=1e-6 weight=0 pad=1
rms_last10 rmsnorm_group rows=4 dim=100 group=30 eps=1e-6 pad=2
rms_last5 rmsnorm_group rows=9 dim=77 group=12 eps=1e-5
rms_gdim rmsnorm_group rows=6 dim=64 group=64 eps=1e-6
rms_g0 rmsnorm_group rows=6 dim=64 group=0 eps=1e-6 pad=5
rms_gbig rmsnorm_group rows=3 dim=40 group=50 eps=1e-6
ln_token layernorm rows=12 dim=67 eps=1e-6 mod=1 mod_ld=402 mod_rows=1 shift_off=0 scale_off=67
ln_frame layernorm rows=30 dim=130 eps=1e-6 pad=3 mod=1 mod_ld=265 mod_rows=10 shift_off=0 scale_off=130
ln_uneven layernorm rows=29 dim=64 eps=1e-6 pad=1 affine=1 mod=1 mod_ld=128 mod_rows=7 shift_off=0 scale_off=64
ln_mlp layernorm rows=10 dim=24 eps=1e-6 mod=1 mod_ld=144 mod_rows=3 shift_off=72 scale_off=96
ln_rows0 layernorm rows=9 dim=33 eps=1e-6 mod=1 mod_ld=77 mod_rows=0 shift_off=0 scale_off=33
ln_ld0 layernorm rows=10 dim=48 eps=1e-6 pad=2 mod=1 mod_ld=0 mod_rows=4 shift_off=0 scale_off=48
ln_vector layernorm rows=11 dim=45 eps=1e-6 affine=1 mod=1
ln_plain layernorm rows=8 dim=31 eps=1e-3 pad=1
res_token residual rows=12 dim=53 gate=1 mod_ld=318 mod_rows=1 gate_off=106
res_frame residual rows=40 dim=64 pad=3 gate=1 mod_ld=67 mod_rows=8 gate_off=0
res_uneven residual rows=23 dim=33 pad=1 gate=1 mod_ld=40 mod_rows=5 gate_off=7
res_rows0 residual rows=7 dim=16 gate=1 mod_ld=99 mod_rows=0 gate_off=0
res_vector residual rows=9 dim=20 gate=1 pad=2
res_plain residual rows=5 dim=17
rope_wan rope f=3 h=4 w=5 heads=2 hd=128 theta=10000 axes=wan pad=3
rope_22_21_21 rope f=3 h=4 w=5 heads=2 hd=128 theta=10000 axes=22,21,21
rope_wan_grid rope f=2 h=30 w=52 heads=1 hd=128 theta=10000 axes=wan
rope_8_28_28 rope f=2 h=3 w=7 heads=3 hd=128 theta=10000 axes=8,28,28 pad=1
rope_theta500 rope f=4 h=3 w=3 heads=1 hd=64 theta=500 axes=12,10,10
rope_theta1e6 rope f=5 h=2 w=3 heads=2 hd=16 theta=1e6 axes=wan
rope_short rope f=3 h=3 w=4 heads=2 hd=64 theta=10000 axes=6,10,10 pad=2
rope_noframe rope f=1 h=6 w=7 heads=1 hd=96 theta=10000 axes=0,24,24
EOF

if ! opsref make "$T" <"$T/cases" >"$T/list" 2>"$T/err"; then
	echo "1..1"
	fail "ops_ref.py make"
	sed 's/^/# /' "$T/err"
	exit 1
fi
plan "$(wc -l <"$T/list")"
while read -r name op; do
	desc="$op $(grep "^$name " "$T/cases" | cut -d' ' -f3-)"
	if ! "$top_builddir/tests/ops_dump" "$op" "$T/$name.in" "$T/$name.out" </dev/null 2>"$T/err"; then
		fail "$desc: ops_dump failed"
		sed 's/^/# /' "$T/err"
	elif res=$(opsref check "$T/$name.in" "$T/$name.out" --tol 1e-5 </dev/null 2>&1); then
		ok "$desc: $res"
	else
		fail "$desc: $res"
	fi
done <"$T/list"
finish

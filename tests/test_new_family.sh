#!/bin/sh
# A family is its files and one line in each registry: Cosmos-Predict2.5 copied under a
# new name ("kosmos": its descriptor files models/cosmos*.c and dit_cosmos.h, its block-
# and stage-kind file tasks/cosmos_block.c, renamed) into a scratch copy of models/ and
# tasks/, one line added to models/dit_families.def (the descriptor, the presets) and to
# tasks/dit_kinds.def (the block kind, the stage kind), nothing else. The new files and
# those that read the registries are compiled with the build's flags and linked with
# the rest of the built library into a command, which must list the new presets and
# generate with the copy the latents the original family generates, byte for byte.
. "$top_srcdir/tests/lib.sh"
need_python
T=$(scratch new_family)
plan 4

# the compiler, flags and libraries of the build (tests/Makefile.inc)
eval "$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory \
	-C "$top_builddir" print-family-build)"

mkdir -p "$T/src"
cp -R "$top_srcdir/models" "$top_srcdir/tasks" "$T/src/"
chmod -R u+w "$T/src" # a distcheck source tree is read-only
rename() {
	sed -e 's/dit_cosmos/dit_kosmos/g' -e 's/dit_block_cosmos/dit_block_kosmos/g' \
		-e 's/dit_stages_cosmos/dit_stages_kosmos/g' -e 's/"cosmos/"kosmos/g' \
		-e 's/cosmos-predict2\.5/kosmos-predict2.5/g' -e 's/"tiny-cosmos/"tiny-kosmos/g' \
		-e 's/"small-cosmos/"small-kosmos/g' "$1"
}
for f in models/cosmos.c models/cosmos_tensors.c models/cosmos_diffusers.c \
	models/dit_cosmos.h tasks/cosmos_block.c; do
	new=$(echo "$f" | sed 's/cosmos/kosmos/')
	rename "$T/src/$f" >"$T/src/$new"
done
{
	echo 'DIT_FAMILY(kosmos_predict25)'
	echo 'DIT_PRESETS(kosmos)'
} >>"$T/src/models/dit_families.def"
{
	echo 'DIT_BLOCK_KIND(kosmos)'
	echo 'DIT_STAGE_KIND(kosmos)'
} >>"$T/src/tasks/dit_kinds.def"

# built again from the scratch copy, the scratch headers first: the new family's files
# and those that read the registries; every other object comes from the build (the
# linker takes an archive's member only for a symbol nothing before it defines)
built=1
objs=
for f in "$T"/src/models/*.c "$T"/src/tasks/*.c; do
	orig="$top_srcdir/$(basename "$(dirname "$f")")/$(basename "$f")"
	if [ -f "$orig" ] && ! grep -q 'dit_families.def\|dit_kinds.def' "$f"; then
		continue
	fi
	case $f in
	*/models/*) flags="$MODELS_FLAGS" ;;
	*) flags="$TASKS_FLAGS" ;;
	esac
	o="$T/$(basename "$(dirname "$f")")_$(basename "$f" .c).o"
	# shellcheck disable=SC2086
	if ! $CC -I"$T/src/models" -I"$T/src/tasks" $flags -c "$f" -o "$o" 2>>"$T/build.err"; then
		built=0
	fi
	objs="$objs $o"
done
# shellcheck disable=SC2086
if [ $built = 1 ] && $CC $LINK_FLAGS -o "$T/ditstar" $CLI_OBJS -Wl,--start-group $objs \
	$LAYER_LIBS -Wl,--end-group $EXT_LIBS 2>>"$T/build.err"; then
	ok "the copy compiles with the build's flags and links with the rest of the library"
else
	fail "the copy compiles with the build's flags and links with the rest of the library"
	head -20 "$T/build.err" | sed 's/^/# /'
fi

if [ -x "$T/ditstar" ] && "$T/ditstar" info --list >"$T/list" 2>&1 &&
	grep -q '^ *tiny-kosmos ' "$T/list" && grep -q '^ *tiny-cosmos ' "$T/list"; then
	ok "the new family's presets are listed beside the original's"
else
	fail "the new family's presets are listed beside the original's"
	sed 's/^/# /' "$T/list" 2>/dev/null | head -20
fi

run() { # BIN PRESET OUT
	"$1" generate --model "$2" --cache-dir "$T/cache" --steps 2 --quiet --workers cpu \
		--output "$3" 2>"$3.err"
}
if [ -x "$T/ditstar" ] && run "$DITSTAR" tiny-cosmos "$T/a.st" &&
	run "$T/ditstar" tiny-kosmos "$T/b.st"; then
	ok "the copy generates"
else
	fail "the copy generates"
	cat "$T/a.st.err" "$T/b.st.err" 2>/dev/null | sed 's/^/# /' | head -20
fi

if [ -s "$T/a.st" ] && [ -s "$T/b.st" ]; then
	same_latents "the copy's latents are the original family's" "$T/a.st" "$T/b.st"
else
	fail "the copy's latents are the original family's: no outputs"
fi
finish

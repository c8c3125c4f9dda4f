/* A checkpoint folder without safetensors files: its PyTorch checkpoint (see
 * dit_checkpoint.h), the fp8 scale map next to it, and the load key. */
#define _POSIX_C_SOURCE 200809L

#include "dit_ck_priv.h"

#include "dit_input.h"
#include "dit_pt.h"

#include <stdlib.h>
#include <string.h>

#define CK_PT_SUFFIX  ".pt"
#define CK_MAP_SUFFIX "_map.pt"
#define CK_QUOTE_MAX  120
#define CK_QBUF       (CK_QUOTE_MAX * 4 + 8)

static int ck_is_map(const char *name)
{
	size_t n = strlen(name), m = strlen(CK_MAP_SUFFIX);
	return n >= m && strcmp(name + n - m, CK_MAP_SUFFIX) == 0;
}

static int ck_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* HunyuanVideo's official download holds mp_rank_00_model_states.pt beside its fp8 pair
 * (mp_rank_00_model_states_fp8.pt and _fp8_map.pt), and the official loader, given the
 * folder, takes the first: of k names (maps set aside), the index of "<stem>.pt" when
 * every other one is "<stem>_fp8.pt", else -1 (then several are refused). */
static int ck_official_pt(char **names, size_t k)
{
	for (size_t i = 0; i < k; i++) {
		size_t stem = strlen(names[i]) - strlen(CK_PT_SUFFIX);
		size_t others = 0;
		for (size_t j = 0; j < k; j++)
			others += j != i &&
			          strlen(names[j]) == stem + strlen("_fp8" CK_PT_SUFFIX) &&
			          strncmp(names[j], names[i], stem) == 0 &&
			          strcmp(names[j] + stem, "_fp8" CK_PT_SUFFIX) == 0;
		if (others == k - 1)
			return (int)i;
	}
	return -1;
}

/* "<stem>_map.pt" of "<stem>.pt". */
static char *ck_map_name(const char *pt)
{
	size_t n = strlen(pt) - strlen(CK_PT_SUFFIX);
	char *m = malloc(n + sizeof CK_MAP_SUFFIX);
	if (m) {
		memcpy(m, pt, n);
		memcpy(m + n, CK_MAP_SUFFIX, sizeof CK_MAP_SUFFIX);
	}
	return m;
}

/* Opens the map of ck->files[0] when there is one and applies its scales. */
static dit_status ck_open_map(dit_checkpoint *ck, const char *pick, dit_error *err)
{
	char *map = ck_map_name(pick);
	char *raw = map ? dit_ck_label(ck, map) : NULL;
	char *label = raw ? dit_input_label(raw) : NULL;
	dit_status st =
	    label ? DIT_OK : dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	int has = st == DIT_OK && dit_ck_exists(ck, map);
	if (st == DIT_OK && has)
		st = dit_ck_add(ck, map, 1, NULL, err);
	if (st == DIT_OK)
		st = dit_pt_apply_scales(ck->files[0], has ? ck->files[1] : NULL, label, err);
	free(label);
	free(raw);
	free(map);
	return st;
}

/* The folder's one *.gguf (*found 0 without one): opened as the checkpoint. In an
 * archive it is the file archived: without config.json its configuration is read as
 * the file's own would be (ck->one_file). */
static dit_status ck_open_gguf(dit_checkpoint *ck, int *found, dit_error *err)
{
	char **names = NULL;
	size_t n = 0;
	*found = 0;
	dit_status st = dit_ck_list(ck, ".gguf", &names, &n, err);
	if (st == DIT_OK && n > 1) {
		char q1[CK_QBUF], q2[CK_QBUF];
		qsort(names, n, sizeof *names, ck_cmp);
		st = dit_error_set(
		    err, DIT_EFORMAT, "%s: %zu *.gguf files ('%s', '%s'%s): a checkpoint holds one",
		    ck->dir, n,
		    dit_error_quote(q1, sizeof q1, names[0], strlen(names[0]), CK_QUOTE_MAX),
		    dit_error_quote(q2, sizeof q2, names[1], strlen(names[1]), CK_QUOTE_MAX),
		    n > 2 ? ", ..." : "");
	}
	if (st == DIT_OK && n == 1) {
		*found = 1;
		st = dit_ck_load(ck, names, 1, err);
		if (st == DIT_OK)
			st = dit_ck_add(ck, names[0], 2, NULL, err);
		if (st == DIT_OK && ck->archive)
			ck->one_file = 1;
	}
	dit_ck_names_free(names, n);
	return st;
}

dit_status dit_ck_open_pt(dit_checkpoint *ck, const char *load_key, dit_error *err)
{
	char **names = NULL;
	size_t n = 0, k = 0;
	dit_status st = dit_ck_list(ck, CK_PT_SUFFIX, &names, &n, err);
	int gguf = 0;
	if (st == DIT_OK && n == 0) {
		dit_ck_names_free(names, n);
		st = ck_open_gguf(ck, &gguf, err);
		if (st != DIT_OK || gguf)
			return st;
		names = NULL;
	}
	for (size_t i = 0; st == DIT_OK && i < n; i++) {
		if (!ck_is_map(names[i])) {
			char *t = names[k];
			names[k++] = names[i];
			names[i] = t;
		}
	}
	if (k > 1)
		qsort(names, k, sizeof *names, ck_cmp);
	int official = k > 1 ? ck_official_pt(names, k) : -1;
	if (official > 0) { /* the one the official loader takes, first */
		char *t = names[0];
		names[0] = names[official];
		names[official] = t;
	}
	if (official >= 0)
		k = 1;
	if (st == DIT_OK && k == 0)
		st =
		    dit_error_set(err, DIT_ENOTFOUND, "%s: no *.safetensors or *.pt file", ck->dir);
	if (st == DIT_OK && k > 1) {
		char q1[CK_QBUF], q2[CK_QBUF];
		st = dit_error_set(
		    err, DIT_EFORMAT,
		    "%s: %zu *.pt files ('%s', '%s'%s): a checkpoint holds one "
		    "(and its *_map.pt)",
		    ck->dir, k,
		    dit_error_quote(q1, sizeof q1, names[0], strlen(names[0]), CK_QUOTE_MAX),
		    dit_error_quote(q2, sizeof q2, names[1], strlen(names[1]), CK_QUOTE_MAX),
		    k > 2 ? ", ..." : "");
	}
	char *want[2] = {NULL, NULL};
	if (st == DIT_OK && !(want[0] = strdup(names[0])))
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	if (st == DIT_OK && !(want[1] = ck_map_name(names[0])))
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	dit_ck_names_free(names, n);
	if (st == DIT_OK)
		st = dit_ck_load(ck, want, dit_ck_exists(ck, want[1]) ? 2 : 1, err);
	if (st == DIT_OK)
		st = dit_ck_add(ck, want[0], 1, load_key, err);
	if (st == DIT_OK)
		st = ck_open_map(ck, want[0], err);
	const char *used =
	    st == DIT_OK ? dit_st_metadata(ck->files[0], DIT_PT_META_LOAD_KEY) : NULL;
	if (used && !(ck->load_key = strdup(used)))
		st = dit_error_set(err, DIT_ENOMEM, "%s: out of memory", ck->dir);
	free(want[0]);
	free(want[1]);
	return st;
}

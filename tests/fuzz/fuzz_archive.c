/* libFuzzer target: a tar, tar.gz, tar.zst or zip archive opened in memory with the
 * member checks and reading dit_checkpoint_open uses: the first reading loads the
 * members named *.json, a second one (dit_archive_load) the others, as the checkpoint
 * loads its shards; then every member is read in full, and each *.gguf member parsed
 * as the checkpoint loader parses it (dit_gguf_open_mem) and its tensors read. Small
 * caps keep each input fast: 64 entries, 1 MiB per member. */
#include "dit_archive.h"
#include "dit_gguf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME        "fuzz.tar"
#define MAX_ENTRIES 64
#define MAX_MEMBER  ((uint64_t)1 << 20)

/* Loads the members named *.json, up to MAX_MEMBER bytes; *ud counts the calls. */
static uint64_t want_json(const char *name, void *ud)
{
	if (!name || !name[0])
		abort();
	(*(size_t *)ud)++;
	size_t n = strlen(name);
	return n >= 5 && strcmp(name + n - 5, ".json") == 0 ? MAX_MEMBER : 0;
}

/* Loads every member, up to MAX_MEMBER bytes. */
static uint64_t want_all(const char *name, void *ud)
{
	(void)ud;
	if (!name || !name[0])
		abort();
	return MAX_MEMBER;
}

/* 1 when the '/'-separated name has the component c. */
static int has_component(const char *name, const char *c)
{
	size_t cl = strlen(c);
	for (const char *p = name;;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == cl && memcmp(p, c, cl) == 0)
			return 1;
		if (!e)
			return 0;
		p = e + 1;
	}
}

/* A GGUF member parsed from its bytes; its tensors within them, each read as fp32. */
static void check_gguf(const dit_archive_member *m)
{
	dit_error e;
	dit_error_clear(&e);
	dit_st_file *f = NULL;
	dit_status st = dit_gguf_open_mem(&f, m->name, m->data, (size_t)m->size, &e);
	if (st != DIT_OK) {
		if (f || e.code != st || strchr(e.msg, '\n'))
			abort();
		return;
	}
	for (size_t i = 0; i < f->ntensors; i++) {
		const dit_st_tensor *t = &f->tensors[i];
		if (t->offset > f->data_size || t->nbytes > f->data_size - t->offset ||
		    f->data_pos + f->data_size != m->size)
			abort();
		float *out = malloc((size_t)t->numel * sizeof(float) + 1);
		if (!out || dit_st_read_f32(f, t, out, &e) != DIT_OK)
			abort();
		free(out);
	}
	dit_st_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dit_error e;
	dit_error_clear(&e);
	dit_archive *ar = NULL;
	size_t asked = 0;
	dit_status st =
	    dit_archive_open_mem(&ar, NAME, data, size, MAX_ENTRIES, want_json, &asked, &e);
	if (st != DIT_OK) {
		if (ar || e.code != st || !strstr(e.msg, NAME))
			abort();
		return 0;
	}
	if (ar->nmembers != asked || ar->nmembers > MAX_ENTRIES)
		abort();
	st = dit_archive_load(ar, want_all, NULL, &e);
	if (st != DIT_OK) {
		if (e.code != st || !strstr(e.msg, NAME))
			abort();
		dit_archive_close(ar);
		return 0;
	}
	volatile uint8_t sum = 0;
	for (size_t i = 0; i < ar->nmembers; i++) {
		const dit_archive_member *m = &ar->members[i];
		const char *n = m->name;
		/* normalised, relative, no '..' and unique */
		if (!n[0] || n[0] == '/' || n[strlen(n) - 1] == '/' || strstr(n, "//") ||
		    has_component(n, ".") || has_component(n, ".."))
			abort();
		if (i > 0 && strcmp(ar->members[i - 1].name, n) >= 0)
			abort();
		if (dit_archive_find(ar, n) != m)
			abort();
		if (m->size > MAX_MEMBER || (m->size > 0 && !m->data))
			abort();
		/* every byte, so ASan sees a member that runs past its buffer */
		for (uint64_t b = 0; b < m->size; b++)
			sum ^= m->data[b];
		/* members that point into the input lie within it */
		if (ar->in_place && m->size > 0 &&
		    (m->data < data || m->size > (uint64_t)(data + size - m->data)))
			abort();
		size_t nl = strlen(n);
		if (nl > 5 && strcmp(n + nl - 5, ".gguf") == 0)
			check_gguf(m);
	}
	(void)sum;
	dit_archive_close(ar);
	return 0;
}

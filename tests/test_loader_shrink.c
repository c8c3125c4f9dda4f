/* A checkpoint that shrinks while it is loaded: the file is opened and validated, then
 * truncated, then its tensors are read. Each read must fail with a one-line error
 * naming the file and the tensor (a reader that maps the file would die of SIGBUS
 * here instead). Covers a safetensors file (tensor read straight into the destination
 * and through the conversion tiles) and the shard of an uncompressed tar, read in
 * place. Standalone (no StarPU); prints TAP. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dit_checkpoint.h"
#include "dit_safetensors.h"

#define PATH_BUF 4096
#define NBIG     (1 << 18) /* 1 MiB of F32: several conversion tiles */

static int tap_n, tap_failed;

static void tap(int ok, const char *name, const char *why)
{
	tap_n++;
	if (ok) {
		printf("ok %d - %s\n", tap_n, name);
	} else {
		printf("not ok %d - %s: %s\n", tap_n, name, why ? why : "");
		tap_failed++;
	}
	fflush(stdout);
}

/* The read must fail as a truncated file, naming label and the tensor. */
static void expect_shrunk(const char *name, dit_status st, const dit_error *e, const char *label)
{
	char why[DIT_ERROR_MSG_MAX + 64];
	snprintf(why, sizeof why, "status %d, message '%s'", (int)st, st ? e->msg : "");
	tap(st == DIT_EFORMAT && e->code == st && !strchr(e->msg, '\n') && strstr(e->msg, label) &&
	        strstr(e->msg, "truncated") && strstr(e->msg, "(tensor 'big')"),
	    name, why);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = n > 0 ? malloc((size_t)n) : NULL;
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = buf ? (size_t)n : 0;
	return buf;
}

/* Writes a safetensors file holding "big" [NBIG] and "small" [4], F32. */
static int write_st(const char *path)
{
	dit_error e;
	float *v = malloc(NBIG * sizeof *v);
	if (!v)
		return -1;
	for (int i = 0; i < NBIG; i++)
		v[i] = (float)i;
	int64_t nb = NBIG, ns = 4;
	dit_st_writer *w = dit_st_writer_new();
	int rc = w && dit_st_writer_add_f32(w, "big", 1, &nb, v, &e) == DIT_OK &&
	                 dit_st_writer_add_f32(w, "small", 1, &ns, v, &e) == DIT_OK &&
	                 dit_st_writer_commit(w, path, &e) == DIT_OK
	             ? 0
	             : -1;
	dit_st_writer_free(w);
	free(v);
	return rc;
}

/* The offset of the data section of the safetensors image at p. */
static size_t st_data_start(const uint8_t *p)
{
	uint64_t h = 0;
	for (int i = 7; i >= 0; i--)
		h = (h << 8) | p[i];
	return (size_t)(8 + h);
}

/* Appends a ustar member (header and data padded to 512 bytes) to f. */
static int tar_add(FILE *f, const char *name, const uint8_t *data, size_t len)
{
	uint8_t h[512] = {0};
	snprintf((char *)h, 100, "%s", name);
	memcpy(h + 100, "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)len);
	memcpy(h + 136, "00000000000", 12);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	static const uint8_t zero[512];
	size_t pad = (512 - len % 512) % 512;
	return fwrite(h, 1, 512, f) == 512 && fwrite(data, 1, len, f) == len &&
	               fwrite(zero, 1, pad, f) == pad
	           ? 0
	           : -1;
}

static const char config[] =
    "{\"_class_name\":\"WanModel\",\"model_type\":\"t2v\",\"dim\":32,\"eps\":1e-06,"
    "\"ffn_dim\":64,\"freq_dim\":16,\"in_dim\":4,\"num_heads\":2,\"num_layers\":2,"
    "\"out_dim\":4,\"text_len\":8,\"text_dim\":24}";

int main(void)
{
	const char *base = getenv("TMPDIR");
	char dir[PATH_BUF], st_path[PATH_BUF + 32], tar_path[PATH_BUF + 32];
	snprintf(dir, sizeof dir, "%s/dit-test-shrink.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		printf("1..0 # SKIP cannot create a temporary directory: %s\n", strerror(errno));
		return 1;
	}
	snprintf(st_path, sizeof st_path, "%s/w.safetensors", dir);
	snprintf(tar_path, sizeof tar_path, "%s/ck.tar", dir);
	float *dst = malloc(NBIG * sizeof *dst);
	uint16_t *dst16 = malloc(NBIG * sizeof *dst16);
	size_t len = 0;
	uint8_t *bytes = NULL;
	tap(dst && dst16 && write_st(st_path) == 0 && (bytes = read_file(st_path, &len)) != NULL,
	    "safetensors file written", strerror(errno));
	if (!bytes)
		return 1;
	size_t data = st_data_start(bytes);

	/* a file: opened, validated, then cut inside the tensor data */
	dit_error e;
	dit_st_file *f = NULL;
	dit_status st = dit_st_open(&f, st_path, &e);
	tap(st == DIT_OK, "safetensors file opens", e.msg);
	const dit_st_tensor *big = f ? dit_st_find(f, "big") : NULL;
	tap(big && dit_st_read_f32(f, big, dst, &e) == DIT_OK && dst[NBIG - 1] == NBIG - 1,
	    "read before the file shrinks", e.msg);
	if (big && truncate(st_path, (off_t)(data + 1000)) == 0) {
		expect_shrunk("F32 read of a file truncated after open: error, no SIGBUS",
		              dit_st_read_f32(f, big, dst, &e), &e, st_path);
		expect_shrunk("bf16 read (conversion tiles) of a truncated file: error",
		              dit_st_read_bf16(f, big, dst16, &e), &e, st_path);
	} else {
		tap(0, "truncate the file", strerror(errno));
		tap(0, "truncate the file", strerror(errno));
	}
	if (big && truncate(st_path, 0) == 0)
		expect_shrunk("read of a file emptied after open: error",
		              dit_st_read_f32(f, big, dst, &e), &e, st_path);
	else
		tap(0, "empty the file", strerror(errno));
	dit_st_close(f);

	/* the shard of an uncompressed tar, read in place */
	FILE *tf = fopen(tar_path, "wb");
	static const uint8_t end[1024];
	int made = tf &&
	           tar_add(tf, "ck/config.json", (const uint8_t *)config, strlen(config)) == 0 &&
	           tar_add(tf, "ck/diffusion_pytorch_model.safetensors", bytes, len) == 0 &&
	           fwrite(end, 1, sizeof end, tf) == sizeof end;
	made = (tf && fclose(tf) == 0) && made;
	tap(made, "tar written", strerror(errno));
	dit_checkpoint *ck = NULL;
	st = dit_checkpoint_open(&ck, tar_path, &e);
	tap(st == DIT_OK && ck->nfiles == 1, "tar checkpoint opens", e.msg);
	const dit_st_file *sf = NULL;
	big = ck ? dit_checkpoint_find(ck, "big", &sf) : NULL;
	tap(big && dit_st_read_f32(sf, big, dst, &e) == DIT_OK && dst[NBIG - 1] == NBIG - 1,
	    "tar shard read before the archive shrinks", e.msg);
	char label[PATH_BUF + 96];
	snprintf(label, sizeof label, "%s:ck/diffusion_pytorch_model.safetensors", tar_path);
	/* config.json's member (1024 bytes) plus the shard's header, then 1000 bytes */
	if (big && truncate(tar_path, (off_t)(1024 + 512 + data + 1000)) == 0)
		expect_shrunk("tar shard read after the archive shrinks: error naming the member",
		              dit_st_read_f32(sf, big, dst, &e), &e, label);
	else
		tap(0, "truncate the tar", strerror(errno));
	dit_checkpoint_close(ck);

	free(bytes);
	free(dst);
	free(dst16);
	unlink(st_path);
	unlink(tar_path);
	rmdir(dir);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

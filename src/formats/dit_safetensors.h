/* safetensors files: a reader that validates everything it is given (a file is read
 * with pread, never mapped, so a file truncated while it is loaded is an error naming
 * it, not a SIGBUS), and a writer that writes to a temporary file renamed into place.
 *
 * File layout: u64 little-endian header length N, N bytes of JSON
 *   { "name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *     "__metadata__": {"k": "v"} }
 * then the data section; offsets are relative to its start. */
#ifndef DIT_SAFETENSORS_H
#define DIT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

typedef enum dit_dtype {
	DIT_DTYPE_F32 = 0,
	DIT_DTYPE_F16,
	DIT_DTYPE_BF16,
	DIT_DTYPE_F64,
	DIT_DTYPE_I64, /* integer tensors (e.g. a timestep saved from PyTorch) */
	DIT_DTYPE_I32,
	DIT_DTYPE_F8_E4M3, /* float8 e4m3fn, times the tensor's scale in fp32 (a .pt's map,
	                      a safetensors file's <module>.scale_weight; else 1) */
	DIT_DTYPE_F8_E5M2, /* float8 e5m2, the same */
	DIT_DTYPE_Q8_0,    /* GGUF's blocks of 32 along the innermost dimension: an fp16
	                      scale d then 32 int8 q (34 bytes), value q x d in fp32 */
	DIT_DTYPE_U8,      /* bytes (ComfyUI's <layer>.comfy_quant: a JSON text) */
	/* the other dtypes of the safetensors format: a file may hold them (flags, indices,
	 * packed codes) beside the weights; never read as a weight */
	DIT_DTYPE_BOOL,
	DIT_DTYPE_I8,
	DIT_DTYPE_I16,
	DIT_DTYPE_U16,
	DIT_DTYPE_U32,
	DIT_DTYPE_U64,
	DIT_DTYPE_COUNT
} dit_dtype;

#define DIT_MAX_DIMS 8

/* Caps checked before a header is read or parsed: what parsing allocates grows with
 * the entries (about 2 KB each), so these bound memory and time. */
#define DIT_ST_MAX_HEADER   ((uint64_t)16 << 20)              /* header bytes */
#define DIT_ST_MAX_TENSORS  ((size_t)65536)                   /* tensor entries per file */
#define DIT_ST_MAX_METADATA ((size_t)4096)                    /* __metadata__ keys */
#define DIT_ST_MAX_VALUES   ((size_t)16 * DIT_ST_MAX_TENSORS) /* JSON values in all */

typedef struct dit_st_tensor {
	char *name;
	dit_dtype dtype;
	int ndim;
	int64_t shape[DIT_MAX_DIMS];
	int64_t numel;
	uint64_t offset; /* from the start of the data section */
	uint64_t nbytes;
	float scale; /* F8_*: the value is the stored one times scale (else unused) */
} dit_st_tensor;

typedef struct dit_st_file {
	char *path;  /* as given to open: the file, or the name of the image */
	char *label; /* path for messages, escaped (dit_input_label) */
	int fd;      /* tensors are read from here with pread; -1 for an image in memory */
	int fd_owned;
	uint64_t base;       /* offset of the image in fd (an archive member), else 0 */
	const uint8_t *data; /* data section of an image in memory, NULL when read from fd */
	uint64_t data_pos;   /* offset of the data section from the start of the image */
	uint64_t data_size;
	dit_st_tensor *tensors; /* sorted by name */
	size_t ntensors;
	char **meta; /* __metadata__ as key, value, key, value, ... */
	size_t nmeta;
} dit_st_file;

/* Whether a tensor of dt is read as a weight: the float types, fp8, Q8_0, I32 and I64
 * (a timestep saved from PyTorch); not bytes, flags or other integers. */
int dit_dtype_is_weight(dit_dtype dt);

/* Bytes per element; 0 for a block type (Q8_0) and an unknown dtype. */
size_t dit_dtype_size(dit_dtype dt);
const char *dit_dtype_name(dit_dtype dt);

/* The storage unit of dt: *elems elements in *bytes bytes (1 and the element size,
 * or Q8_0's 32 in 34); 0 for an unknown dtype. A tensor of a block type holds whole
 * blocks along its innermost dimension. */
int dit_dtype_block(dit_dtype dt, size_t *elems, size_t *bytes);

/* Opens and validates path: a regular file (opened without blocking: FIFOs, devices
 * and directories are refused), header length within the file and the caps above,
 * JSON well formed, known dtypes, shapes non-negative with numel * size == end - begin,
 * offsets in bounds, no overlaps, no duplicate names. The file stays open; tensor
 * data are read with pread when asked for. Errors name the file (and tensor). */
dit_status dit_st_open(dit_st_file **out, const char *path, dit_error *err);

/* Same validation as dit_st_open, of a whole safetensors image already in memory.
 * The image is neither copied nor freed by dit_st_close: the caller keeps it alive
 * (and unchanged) until then. name stands for the file in messages (escaped into
 * f->label) and is kept as f->path. */
dit_status dit_st_open_mem(dit_st_file **out, const char *name, const void *data, size_t size,
                           dit_error *err);

/* The same for an image of size bytes at offset offset of the open file fd (an
 * uncompressed archive's member), read with pread. fd is borrowed: it must stay open
 * until dit_st_close. */
dit_status dit_st_open_fd(dit_st_file **out, const char *name, int fd, uint64_t offset,
                          uint64_t size, dit_error *err);
void dit_st_close(dit_st_file *f);

/* The __metadata__ value of key, NULL when absent. */
const char *dit_st_metadata(const dit_st_file *f, const char *key);

/* NULL when absent. */
const dit_st_tensor *dit_st_find(const dit_st_file *f, const char *name);

/* Converts the tensor to fp32 into dst (numel floats); F8_E4M3 and F8_E5M2 values are
 * multiplied by the tensor's scale in fp32, Q8_0 ones by their block's. A file that ends before the
 * tensor's data (it shrank after it was opened) is DIT_EFORMAT naming it, a failed
 * read DIT_EIO. */
dit_status dit_st_read_f32(const dit_st_file *f, const dit_st_tensor *t, float *dst,
                           dit_error *err);

/* Converts a tensor to bf16 (round to nearest even) into dst [numel]; a BF16 tensor is
 * copied bit for bit. */
dit_status dit_st_read_bf16(const dit_st_file *f, const dit_st_tensor *t, uint16_t *dst,
                            dit_error *err);

/* t's bytes as the file stores them (two-byte dtypes in host order): t->nbytes into dst.
 * For the compact weights a slab keeps as they are (fp16, bf16, float8, Q8_0). */
dit_status dit_st_read_raw(const dit_st_file *f, const dit_st_tensor *t, void *dst, dit_error *err);

/* Writer: tensors are added in order, each as F32 from host memory (the data is
 * copied at dit_st_writer_add time), and dit_st_writer_commit writes path.tmp.XXXXXX
 * then renames it to path; on any failure nothing is left at path. */
typedef struct dit_st_writer dit_st_writer;
dit_st_writer *dit_st_writer_new(void);
dit_status dit_st_writer_add_f32(dit_st_writer *w, const char *name, int ndim, const int64_t *shape,
                                 const float *data, dit_error *err);
dit_status dit_st_writer_set_metadata(dit_st_writer *w, const char *key, const char *value,
                                      dit_error *err);
dit_status dit_st_writer_commit(dit_st_writer *w, const char *path, dit_error *err);
/* The file dit_st_writer_commit would write, as one malloc'd image in memory (*image,
 * *size bytes; free it): what dit_st_open_mem reads, and dit_forward_opts' inputs_image. */
dit_status dit_st_writer_image(const dit_st_writer *w, void **image, size_t *size, dit_error *err);
void dit_st_writer_free(dit_st_writer *w);

#endif

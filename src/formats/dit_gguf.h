/* GGUF files (ggml's format, as city96's ComfyUI-GGUF convert tool and llama-quantize
 * write video DiTs) read as a safetensors-like tensor table: a dit_st_file whose
 * tensors are read in place with pread (never mapped) and widened on load, so the
 * rest of the loader does not know the difference.
 *
 * Layout (little-endian): "GGUF", u32 version (3; 2 is the same layout), u64 tensor
 * count, u64 metadata count; the metadata (key string, u32 type, value; a string is a
 * u64 length and its bytes, an array a u32 type, a u64 count and the values); the
 * tensor infos (name, u32 n_dims, u64 ne[n_dims] innermost first, u32 ggml type, u64
 * offset into the data section); padding to general.alignment (default 32); the data
 * section. The table's shapes are torch's order (ne reversed).
 *
 * Strict: version 2 or 3 (a byte-swapped version is a big-endian file, refused),
 * at most DIT_ST_MAX_TENSORS tensors, DIT_GGUF_MAX_KV metadata entries, keys of
 * DIT_GGUF_MAX_KEY bytes, strings of DIT_GGUF_MAX_STRING, arrays of
 * DIT_GGUF_MAX_ARRAY values and DIT_GGUF_MAX_META bytes of metadata in all (every
 * count checked against the bytes left before anything is allocated), no array of
 * arrays, no key twice, booleans 0 or 1, general.alignment a u32 power of two up to
 * 1 MiB; tensor names of 1 to DIT_GGUF_MAX_NAME bytes without NUL and unique, 1 to
 * DIT_MAX_DIMS dimensions whose product and byte size do not overflow, types F32,
 * F16, BF16 and Q8_0 (rows of whole 32-element blocks) and every other ggml type
 * refused by name, offsets aligned, data inside the file and no two tensors
 * overlapping. Errors name the file (and the tensor or key) in one line. */
#ifndef DIT_GGUF_H
#define DIT_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"
#include "dit_safetensors.h"

#define DIT_GGUF_MAX_KV     ((uint64_t)65536)
#define DIT_GGUF_MAX_KEY    ((uint64_t)65535)
#define DIT_GGUF_MAX_STRING ((uint64_t)1 << 20)
#define DIT_GGUF_MAX_ARRAY  ((uint64_t)1 << 24)
#define DIT_GGUF_MAX_META   ((uint64_t)64 << 20)
#define DIT_GGUF_MAX_NAME   ((uint64_t)1024)

/* Metadata the reader sets (dit_st_metadata): "format" "gguf", and every string
 * entry of the file under its key ("general.architecture": "wan"). */
#define DIT_GGUF_META_ARCH "general.architecture"

/* Opens and validates the GGUF file at path (a regular file, opened without
 * blocking); it stays open and tensors are read from it by pread. */
dit_status dit_gguf_open(dit_st_file **out, const char *path, dit_error *err);

/* The same for the size bytes at offset in fd (an archive member read in place: an
 * uncompressed tar), which the caller keeps open until dit_st_close; name names it in
 * messages and becomes f->path. */
dit_status dit_gguf_open_fd(dit_st_file **out, const char *name, int fd, uint64_t offset,
                            uint64_t size, dit_error *err);

/* The same for an image in memory (kept alive and unchanged by the caller until
 * dit_st_close); name names it in messages and becomes f->path. */
dit_status dit_gguf_open_mem(dit_st_file **out, const char *name, const void *data, size_t size,
                             dit_error *err);

/* Whether f was read from a GGUF file. */
int dit_gguf_is(const dit_st_file *f);

/* The name of ggml type id ("Q4_K"); NULL when unknown. */
const char *dit_gguf_type_name(uint32_t type);

#endif

/* What the safetensors reader, its tensor reads and the writer share (private). */
#ifndef DIT_ST_PRIV_H
#define DIT_ST_PRIV_H

#include <stdint.h>
#include <string.h>

#include "dit_safetensors.h"

#define ST_METADATA "__metadata__"
/* Longest name quoted in an error message, in bytes of the source name. */
#define ST_QUOTE_MAX 120
/* Room for one quoted name: every byte may grow to \xNN, plus "..." and NUL. */
#define ST_QUOTE_BUF (ST_QUOTE_MAX * 4 + 8)

static inline const char *st_quote(char *buf, size_t cap, const char *s, size_t len)
{
	return dit_error_quote(buf, cap, s, len, ST_QUOTE_MAX);
}

/* ComfyUI's fp8 scales: every "<module>.scale_weight" or "<module>.weight_scale" of f
 * (not both) sets the scale of its "<module>.weight", which must be F8_E4M3 or F8_E5M2;
 * the scale one finite float element; a "<module>.comfy_quant" must name the fp8 format
 * its weight is stored in. Errors name the file and the tensor (dit_st_scale.c). */
dit_status dit_st_apply_scales(dit_st_file *f, dit_error *err);

/* Parses and checks the header (len bytes of JSON, no NUL needed) of f, whose data
 * section is set, into its tensor table and metadata, the fp8 scales applied
 * (dit_st_header.c). Errors name the file and the tensor. */
dit_status dit_st_header_parse(dit_st_file *f, const char *hdr, size_t len, dit_error *err);

/* An empty file record named name (path and escaped label set, fd -1); NULL when out
 * of memory. Every reader of a tensor file (safetensors, GGUF) starts from one. */
dit_st_file *dit_st_file_new(const char *name);

static inline uint16_t st_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t st_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t st_le64(const uint8_t *p)
{
	return (uint64_t)st_le32(p) | ((uint64_t)st_le32(p + 4) << 32);
}

#endif

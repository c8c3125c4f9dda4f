/* A PNG writer for previews (see dit_png.h). Layout: the signature, IHDR, one IDAT
 * holding a zlib stream of stored deflate blocks (each row prefixed by filter type 0),
 * IEND. */
#include "dit_png.h"

#include <stdlib.h>
#include <string.h>

#include "dit_io.h"

uint32_t dit_png_crc(uint32_t crc, const uint8_t *buf, size_t len)
{
	crc = ~crc;
	for (size_t i = 0; i < len; i++) {
		crc ^= buf[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

/* A chunk of type (4 letters) and n data bytes at p: length, type, data, CRC. */
static uint8_t *chunk(uint8_t *p, const char *type, const uint8_t *data, size_t n)
{
	uint8_t *start = p + 4;
	p = put32(p, (uint32_t)n);
	memcpy(p, type, 4);
	if (n)
		memmove(p + 4, data, n);
	p += 4 + n;
	return put32(p, dit_png_crc(0, start, n + 4));
}

dit_status dit_png_encode(const uint8_t *rgb, uint32_t width, uint32_t height, uint8_t **out,
                          size_t *len, dit_error *err)
{
	if (!width || !height || width > (1u << 24) || height > (1u << 24) ||
	    (uint64_t)width * height > ((uint64_t)1 << 30))
		return dit_error_set(err, DIT_EINVAL, "png: %ux%u: not a preview size", width,
		                     height);
	size_t row = 1 + (size_t)width * 3, raw = row * height;
	size_t nblocks = raw / 65535 + 1;
	size_t zlen = 2 + raw + 5 * nblocks + 4; /* header, blocks, Adler-32 */
	size_t total = 8 + (12 + 13) + (12 + zlen) + 12;
	uint8_t *buf = malloc(total), *z = malloc(zlen);
	if (!buf || !z) {
		free(buf);
		free(z);
		return dit_error_set(err, DIT_ENOMEM, "png: out of memory (%zu bytes)", total);
	}
	/* the zlib stream: 32 K window, no dictionary, fastest */
	uint8_t *q = z;
	*q++ = 0x78;
	*q++ = 0x01;
	uint32_t a = 1, b = 0; /* Adler-32 of the raw bytes */
	size_t left = raw;
	uint8_t *block = NULL;
	size_t in_block = 0, block_cap = 0;
	for (uint32_t y = 0; y < height; y++) {
		for (size_t x = 0; x < row; x++) {
			uint8_t v = x == 0 ? 0 : rgb[(size_t)y * width * 3 + x - 1];
			if (in_block == block_cap) { /* a new stored block */
				block_cap = left < 65535 ? left : 65535;
				left -= block_cap;
				*q++ = left == 0 ? 1 : 0; /* BFINAL, BTYPE 00 */
				*q++ = (uint8_t)block_cap;
				*q++ = (uint8_t)(block_cap >> 8);
				*q++ = (uint8_t)~block_cap;
				*q++ = (uint8_t)(~block_cap >> 8);
				block = q;
				q += block_cap;
				in_block = 0;
			}
			block[in_block++] = v;
			a = (a + v) % 65521u;
			b = (b + a) % 65521u;
		}
	}
	q = put32(q, (b << 16) | a);
	zlen = (size_t)(q - z);

	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	uint8_t ihdr[13], *p = buf;
	put32(ihdr, width);
	put32(ihdr + 4, height);
	ihdr[8] = 8;  /* bits per sample */
	ihdr[9] = 2;  /* RGB */
	ihdr[10] = 0; /* deflate */
	ihdr[11] = 0; /* filter method 0 */
	ihdr[12] = 0; /* no interlace */
	memcpy(p, sig, 8);
	p = chunk(p + 8, "IHDR", ihdr, 13);
	p = chunk(p, "IDAT", z, zlen);
	p = chunk(p, "IEND", NULL, 0);
	free(z);
	*out = buf;
	*len = (size_t)(p - buf);
	return DIT_OK;
}

dit_status dit_png_write(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height,
                         dit_error *err)
{
	uint8_t *png;
	size_t len;
	dit_status st = dit_png_encode(rgb, width, height, &png, &len, err);
	if (st)
		return st;
	st = dit_io_write_file_atomic(path, png, len, err);
	free(png);
	return st;
}

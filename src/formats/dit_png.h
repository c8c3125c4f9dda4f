/* A PNG writer for previews: 8-bit RGB, no interlace, the image data in stored
 * (uncompressed) deflate blocks, so no compression library is needed. */
#ifndef DIT_PNG_H
#define DIT_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

/* The PNG file of rgb [height][width][3] as one malloc'd buffer (*out, *len). */
dit_status dit_png_encode(const uint8_t *rgb, uint32_t width, uint32_t height, uint8_t **out,
                          size_t *len, dit_error *err);

/* Encodes and writes it to path atomically (a temporary file renamed into place). */
dit_status dit_png_write(const char *path, const uint8_t *rgb, uint32_t width, uint32_t height,
                         dit_error *err);

/* The CRC-32 (ISO 3309, as PNG chunks use) of buf[0..len), continuing from crc (0 to
 * start). */
uint32_t dit_png_crc(uint32_t crc, const uint8_t *buf, size_t len);

#endif

#include "dit_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

dit_status dit_error_set(dit_error *err, dit_status code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

void dit_error_clear(dit_error *err)
{
	if (err) {
		err->code = DIT_OK;
		err->msg[0] = '\0';
	}
}

const char *dit_status_str(dit_status code)
{
	switch (code) {
	case DIT_OK: return "ok";
	case DIT_EINVAL: return "invalid argument";
	case DIT_EIO: return "I/O error";
	case DIT_EFORMAT: return "malformed file";
	case DIT_ESHAPE: return "shape mismatch";
	case DIT_ENOTFOUND: return "not found";
	case DIT_ENOMEM: return "out of memory";
	case DIT_ERUNTIME: return "runtime error";
	case DIT_EUNSUPPORTED: return "unsupported";
	case DIT_EINTERRUPTED: return "interrupted";
	case DIT_EUSAGE: return "usage error";
	}
	return "unknown error";
}

const char *dit_error_quote(char *buf, size_t cap, const char *s, size_t len, size_t max_len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	size_t n = len < max_len ? len : max_len;
	for (size_t i = 0; i < n && o + 8 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\') {
			buf[o++] = (char)c;
		} else {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	if (n < len && o + 4 < cap) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

#include "dit_error.h"

#include <stdarg.h>
#include <stdio.h>

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
	}
	return "unknown error";
}

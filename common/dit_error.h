/* Errors: every library call returns a dit_status and, on failure, fills a dit_error
 * with one line naming the file or tensor at fault. The CLI prints that line and
 * exits non-zero; the library never exits. */
#ifndef DIT_ERROR_H
#define DIT_ERROR_H

#include <stddef.h>

typedef enum dit_status {
	DIT_OK = 0,
	DIT_EINVAL,       /* bad argument or option */
	DIT_EIO,          /* read/write/open failed */
	DIT_EFORMAT,      /* malformed file (header, JSON, truncated data) */
	DIT_ESHAPE,       /* tensor shape or dtype does not match the config */
	DIT_ENOTFOUND,    /* missing file or tensor */
	DIT_ENOMEM,       /* allocation failed */
	DIT_ERUNTIME,     /* StarPU refused or failed */
	DIT_EUNSUPPORTED, /* valid but not supported (dtype, model type) */
	DIT_EINTERRUPTED, /* stopped on request (a signal), state saved */
	DIT_EUSAGE,       /* an option's value, or a combination of options, that this run
	                     refuses (the CLI exits 2): named in the message */
} dit_status;

#define DIT_ERROR_MSG_MAX 512

typedef struct dit_error {
	dit_status code;
	char msg[DIT_ERROR_MSG_MAX];
} dit_error;

/* Records code and a printf-style message in err (which may be NULL); returns code. */
dit_status dit_error_set(dit_error *err, dit_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err to DIT_OK with an empty message. */
void dit_error_clear(dit_error *err);

/* Copies s[0..len) into buf (cap bytes) for an error message: printable ASCII as is,
 * other bytes as \xNN, so that a message stays on one line whatever a file holds;
 * more than max_len bytes are cut and marked "...". Returns buf. */
const char *dit_error_quote(char *buf, size_t cap, const char *s, size_t len, size_t max_len);

/* A short name for a status ("invalid argument", "I/O error", ...). */
const char *dit_status_str(dit_status code);

/* In a function returning dit_status: return the status of call when it is not DIT_OK. */
#define DIT_TRY(call)                                                                              \
	do {                                                                                       \
		dit_status st_ = (call);                                                           \
		if (st_ != DIT_OK)                                                                 \
			return st_;                                                                \
	} while (0)

#endif

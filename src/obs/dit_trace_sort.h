/* paje.trace put in time order (src/obs/dit_trace_sort.c). */
#ifndef DIT_TRACE_SORT_H
#define DIT_TRACE_SORT_H

#include "dit_error.h"

/* Rewrites the Paje file at path (atomically) with its definitions first and its timed
 * events stably sorted by time, when they are not in order already; a missing file is
 * no error. */
dit_status dit_trace_sort_paje(const char *path, dit_error *err);

#endif

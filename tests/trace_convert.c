/* Builds DIR/trace.json from DIR/tasks.rec and DIR/paje.trace, the last step of
 * `--trace DIR`, for tests/test_trace.sh to check on hand-written traces:
 *
 *   trace_convert DIR
 *
 * Exit 0, or 1 with the one-line error on stderr. */
#include <stdio.h>

#include "dit_trace.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: trace_convert DIR\n");
		return 2;
	}
	dit_error err;
	dit_error_clear(&err);
	if (dit_trace_write_json(argv[1], &err) != DIT_OK) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	return 0;
}

/* Builds DIR/trace.json from DIR/tasks.rec and DIR/paje.trace, the last step of
 * `--trace DIR`, for tests/test_trace.sh to check on hand-written traces; or puts a
 * Paje file in time order, as `--trace` does after StarPU's conversion:
 *
 *   trace_convert DIR
 *   trace_convert --sort FILE
 *
 * Exit 0, or 1 with the one-line error on stderr. */
#include <stdio.h>
#include <string.h>

#include "dit_trace.h"
#include "dit_trace_sort.h"

int main(int argc, char **argv)
{
	int sort = argc == 3 && strcmp(argv[1], "--sort") == 0;
	if (argc != 2 && !sort) {
		fprintf(stderr, "usage: trace_convert DIR | trace_convert --sort FILE\n");
		return 2;
	}
	dit_error err;
	dit_error_clear(&err);
	if ((sort ? dit_trace_sort_paje(argv[2], &err) : dit_trace_write_json(argv[1], &err)) !=
	    DIT_OK) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	return 0;
}

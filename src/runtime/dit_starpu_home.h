/* StarPU's calibration folder as an input: StarPU aborts in starpu_init when a folder
 * it keeps its calibration in is a file, cannot be written or has no room, and when a
 * bus calibration file of this host is cut short or garbage. These checks name the
 * path and what to do instead (no StarPU call). */
#ifndef DIT_STARPU_HOME_H
#define DIT_STARPU_HOME_H

#include <stddef.h>

#include "dit_error.h"

/* The sampling folder (STARPU_PERF_MODEL_DIR, else STARPU_HOME/.starpu/sampling, else
 * $HOME's), its parents up from STARPU_HOME and its bus/ and codelets/ folders: each a
 * folder or absent; the deepest that exists writable with at least 1 MiB free; the bus
 * files of this host (STARPU_HOSTNAME, else the host name up to its first dot: .config,
 * .affinity, .latency, .bandwidth) regular files of at most 16 MiB whose lines read as
 * StarPU reads them. */
dit_status dit_starpu_home_check(dit_error *err);

/* The host name StarPU files its calibration under: STARPU_HOSTNAME, else the host
 * name up to its first dot; -1 when there is none. */
int dit_starpu_host(char *host, size_t len);
/* The folder of StarPU's bus calibration (the sampling folder's bus/). */
void dit_starpu_bus_dir(char *buf, size_t len);

/* The OpenCL devices this host's bus calibration counted (its .config's "Number of
 * OpenCL nodes"); -1 when there is none yet or it does not say. */
int dit_starpu_bus_opencl_nodes(void);

#endif

/* Applying the offload plan: the StarPU side of the planner's decisions. */
#ifndef DIT_PLACE_H
#define DIT_PLACE_H

#include "dit_planner.h"

/* Registers the chunk handles on their home node (after the runtime has started; in
 * disk mode each chunk with its manifest checksum, checked on every read);
 * where: the StarPU worker mask of the compute workers; compute_node: their memory
 * node. */
dit_status dit_place_register(dit_offload *off, uint32_t where, int compute_node, dit_error *err);

/* Unregisters the handles the planner created, closes the disk objects and releases
 * the chunk store's lock (the model is freed by its owner). After all tasks have
 * finished. The object itself must stay alive until the runtime has shut down: StarPU
 * keeps using its disk ops. */
void dit_place_release(dit_offload *off);

/* The planner's disk ops (dit_diskops.h) for starpu_disk_register(ops, dir, size):
 * StarPU's unistd backend (o_direct: its O_DIRECT variant) with pread / pwrite loops
 * (asynchronous requests on an I/O thread) that never assert and move any size, so
 * chunks over 2 GiB read back whole. Failures are not recorded (the planner registers
 * its own dit_diskops, which records them). */
void dit_place_disk_ops(struct starpu_disk_ops *ops, int o_direct);

/* In disk mode, after tasks have run: DIT_EIO with one line naming the chunk store
 * file, the error and the request when a read or write on the disk node failed, else
 * DIT_OK. Whatever used the data of a failed read is wrong: nothing computed since
 * may be saved. */
dit_status dit_place_io_error(dit_offload *off, dit_error *err);

/* The graph's view of weights w (tasks/dit_graph.h: each expert's configuration, the
 * handles of its globals and chunks and their layouts), once they are registered. */
void dit_place_graph_weights(const dit_weights *w, dit_graph_weights *out);

#endif

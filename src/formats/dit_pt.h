/* PyTorch checkpoints (torch.save's zip format) read as a safetensors-like tensor
 * table: a dit_st_file whose tensors are read in place from the zip's stored data
 * members (pread, as safetensors shards), so the rest of the loader does not know the
 * difference.
 *
 * The zip holds <root>/data.pkl (the pickle), <root>/data/<key> (one stored member per
 * storage) and small members (version, byteorder, ...). The pickle is read by the
 * restricted reader of dit_pickle.h; its value must be a dict: with the load key (or
 * "module" or "ema") the dict under that key is the state dict, else the dict itself
 * is (a bare state dict, as torch.save(model.state_dict())). Every value of the state
 * dict must be a tensor of a dtype the converter reads (F32, F16, BF16, F64, I64, I32,
 * F8_E4M3) with a string name, names unique. Refused: byteorder "big", members that
 * are compressed or encrypted, a data.pkl over DIT_PT_MAX_PICKLE or with a bad CRC, and
 * everything the zip and pickle readers refuse. */
#ifndef DIT_PT_H
#define DIT_PT_H

#include <stdint.h>

#include "dit_error.h"
#include "dit_safetensors.h"

#define DIT_PT_MAX_PICKLE ((uint64_t)64 << 20) /* bytes of data.pkl */
#define DIT_PT_LOAD_KEY   "module"             /* the official --load-key default */

/* Metadata the reader sets on the file (dit_st_metadata): "format" is "pt";
 * "load_key" the key the state dict was under (absent for a bare state dict). */
#define DIT_PT_META_LOAD_KEY "load_key"

/* Opens the torch checkpoint at path; load_key NULL: DIT_PT_LOAD_KEY. Errors name the
 * file (and member, tensor or pickle byte). */
dit_status dit_pt_open(dit_st_file **out, const char *path, const char *load_key, dit_error *err);

/* The same for a checkpoint image of size bytes at offset off of fd (borrowed: it
 * stays open until dit_st_close), or in memory (kept by the caller until then); name
 * names it in messages and becomes f->path. */
dit_status dit_pt_open_fd(dit_st_file **out, const char *name, int fd, uint64_t off, uint64_t size,
                          const char *load_key, dit_error *err);
dit_status dit_pt_open_mem(dit_st_file **out, const char *name, const void *data, size_t size,
                           const char *load_key, dit_error *err);

/* The fp8 scales: every F8_E4M3 tensor T of f takes its scale from map (a bare dict of
 * one-element float tensors, as HunyuanVideo's *_fp8_map.pt): the entry named T without
 * its ".weight" (the module's name, as the official code looks it up) or else T. A
 * scale must be finite. Refused: an F8_E4M3 tensor without a scale (or without a map:
 * map NULL, map_name the file expected), a tensor with both names, a scale for a
 * tensor that is not F8_E4M3. Map entries for no tensor are ignored. Then the map's
 * tensor table is emptied: the file stays open as part of the checkpoint (its path
 * identifies the weights), its tensors are not the model's. */
dit_status dit_pt_apply_scales(dit_st_file *f, dit_st_file *map, const char *map_name,
                               dit_error *err);

#endif

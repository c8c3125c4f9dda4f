/* The disk chunk store of --offload disk, one per checkpoint (and weight dtype) for
 * every chunk size: per pool one file of blocks (blocks.bin: block b at b times the
 * block's stride, as the weight store lays blocks out, so a chunk of N blocks is one
 * contiguous extent of it) and manifest.json, which ties the store to the checkpoint
 * it was made from (the blocks' geometry, and each checkpoint file's path, size and
 * XXH3-64 of its content) and holds each block's XXH3-64 checksum. The blocks file is
 * written under a temporary name renamed into place and the manifest last, so an
 * interrupted write never leaves a store that looks complete. Before a store is used,
 * every block is checked against the manifest (size and checksum) and the
 * checkpoint's content against the manifest's: a stale, truncated or corrupted store
 * is rebuilt, never used; so is the per-chunk-size layout of older versions (a file
 * per chunk, chunk_0000.bin, ...), whose files are removed.
 *
 * A checkpoint file is hashed when the store is written and whenever its size,
 * modification time, change time, inode or device differ from the record the
 * manifest keeps of them (or the record was taken within 2 s of the file's last
 * change, when a later change could keep the same times); otherwise the recorded hash
 * stands. Copying another file over it with its times (cp -p, touch -r) changes its
 * change time, which no user can set, so it is hashed and the store rebuilt.
 *
 * Locks: a run holds a shared lock on the store (use.lock) from its preparation to
 * its end; preparations are serialized by an exclusive one (build.lock), and a store
 * is written or its stale temporary files removed only under an exclusive use.lock,
 * so that no run ever reads a store another one is writing. Runs of the same
 * checkpoint share a store at once; a run that must rewrite it waits for the others
 * to end. */
#ifndef DIT_STORE_H
#define DIT_STORE_H

#include "dit_stage.h"
#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"
#include "dit_weights.h"

typedef struct dit_store_status {
	int reused;       /* the store was complete and intact */
	char reason[512]; /* why it was (re)written, when it was */
	size_t hashed;    /* checkpoint bytes hashed to check or write it */
	/* the check's reads of the store's blocks (O_DIRECT where it works, one in flight):
	 * their bytes and nanoseconds, the drive's plain sequential rate */
	unsigned long long seq_bytes, seq_ns;
	/* in: where hashing the checkpoint and writing the chunks report how far they are
	 * (NULL: nowhere) */
	const dit_stage_progress *progress;
} dit_store_status;

/* The locks a run holds on a store directory (all of its pools). */
typedef struct dit_store_lock {
	int build, use; /* lock files' descriptors, -1: not open */
	int use_excl;   /* use.lock is held exclusively */
	int told;       /* the waiting line was printed */
	double wait_s;  /* how long to wait for another run (< 0: as long as it takes) */
	char *dir;
} dit_store_lock;

#define DIT_STORE_BLOCKS "blocks.bin"

/* ditstar's cache keeps one chunk store per checkpoint and weight dtype. dir is one
 * there, named "<checkpoint>[-<dtype>]": the stores of the same checkpoint and dtype
 * that older versions made per chunk size ("<checkpoint>-c<chunk size>[-<dtype>]"),
 * and any store of the checkpoint cut short (no manifest), are removed, each unless a
 * run holds one of its locks, and only the files a store makes (a folder with
 * anything else in it stays). Returns how many stores went, their bytes in *bytes. */
int dit_store_reap_siblings(const char *dir, size_t *bytes);

/* A lock object that holds nothing (what dit_store_unlock leaves). */
void dit_store_lock_init(dit_store_lock *lk);

/* Makes dir the chunk store's: a new folder is created, an empty one taken, and either
 * marked (the file ditstar-store); a marked one is the store's already. Any other
 * folder (files and no marker: a folder of the user's, a checkpoint's) is refused,
 * DIT_EUSAGE naming it, unless adopt (a store in ditstar's own cache, from before the
 * marker). */
dit_status dit_store_own(const char *dir, int adopt, dit_error *err);

/* Removes stale temporary files (dit_io's "NAME.tmp.XXXXXX", StarPU's "STARPU_XXXXXX")
 * from the store's folder dir and its sub-folders (depth levels). */
void dit_store_clean_temps(const char *dir, int depth);

/* The bytes of the store dir's data files (its blocks file, and the chunk files of the
 * older per-chunk layout: those a rewrite replaces), and their removal: names the store
 * makes only. */
size_t dit_store_old_bytes(const char *dir);
void dit_store_remove_old(const char *dir);

/* While preparing (dit_store_lock_begin's locks held): the use lock exclusively,
 * waiting for the runs using the store to end. */
dit_status dit_store_lock_exclusive(dit_store_lock *lk, dit_error *err);

/* Creates dir if needed (as dit_store_own, adopt as there), takes its build lock and a shared (or,
 * when no other run uses the store, exclusive) use lock, waiting for other runs up to wait_s
 * seconds (< 0: as long as it takes; 0: not at all), with one line on stderr when it waits. With
 * the use lock exclusive, removes stale temporary files (dit_io's "NAME.tmp.XXXXXX", StarPU's
 * "STARPU_XXXXXX") from dir and its sub-folders. */
dit_status dit_store_lock_begin(dit_store_lock *lk, const char *dir, int adopt, double wait_s,
                                dit_error *err);

/* Makes dir (dir of lk or a sub-folder) hold the store of pool m's blocks (its
 * checkpoint must be open): verifies an existing one (refreshing the manifest's
 * file records when only those changed), else takes the use lock exclusively
 * (waiting for the runs using it) and writes it, after checking that the file system
 * has room for it plus extra_bytes (what StarPU writes there besides the chunks). */
dit_status dit_store_prepare(const char *dir, const dit_pool *m, size_t extra_bytes,
                             dit_store_lock *lk, dit_store_status *res, dit_error *err);

/* Makes dir hold the checksums of pool m's blocks for reading them where they lie in
 * the checkpoint (dit_extent.h; no blocks file): inplace.json, with the checkpoint's
 * files as dit_store_prepare ties a store to them and each block's checksum of the
 * bytes dit_pool_read_block makes of it. Kept while the checkpoint's content is the
 * same (its files' records, else hashed), else taken again (the use lock exclusive):
 * every block read once. res as dit_store_prepare's. */
dit_status dit_store_prepare_inplace(const char *dir, const dit_pool *m, dit_store_lock *lk,
                                     dit_store_status *res, dit_error *err);

/* The checksums of m's blocks from dir's inplace.json. */
dit_status dit_store_inplace_sums(const char *dir, const dit_pool *m, uint64_t *sums,
                                  dit_error *err);

/* After every pool's dit_store_prepare: keeps a shared use lock until dit_store_unlock
 * and lets the next run prepare. */
dit_status dit_store_lock_end_prepare(dit_store_lock *lk, dit_error *err);

/* Releases every lock (at the end of the run, or on failure). */
void dit_store_unlock(dit_store_lock *lk);

/* The blocks' XXH3-64 checksums from dir's manifest (m->nblocks of them), for the disk
 * node to check every read against. */
dit_status dit_store_block_sums(const char *dir, const dit_pool *m, uint64_t *sums, dit_error *err);

#endif

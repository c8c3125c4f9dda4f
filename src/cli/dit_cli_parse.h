/* The ditstar command line's options (src/cli/dit_cli_parse.c): one table for every
 * command, parsed into a dit_cli; each command then says which options it takes. */
#ifndef DIT_CLI_PARSE_H
#define DIT_CLI_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "dit_run.h"

#define EXIT_USAGE 2

enum {
	OPT_MODEL_DIR = 256,
	OPT_MODEL,
	OPT_CACHE_DIR,
	OPT_FRAMES,
	OPT_HEIGHT,
	OPT_WIDTH,
	OPT_STEPS,
	OPT_SOLVER,
	OPT_GUIDANCE,
	OPT_SHIFT,
	OPT_SEED,
	OPT_CONTEXT,
	OPT_OUTPUT,
	OPT_SAVE_INPUTS,
	OPT_STATS,
	OPT_SCHED,
	OPT_NCPUS,
	OPT_QUIET,
	OPT_INPUTS,
	OPT_LIST,
	OPT_TRACE,
	OPT_OFFLOAD,
	OPT_CHUNK,
	OPT_CHUNK_DOUBLE,
	OPT_CHUNK_SINGLE,
	OPT_EMBEDDED,
	OPT_PREFETCH,
	OPT_SLOTS,
	OPT_RESIDENT,
	OPT_DRY_RUN,
	OPT_JSON,
	OPT_ROUNDS,
	OPT_OFFLOAD_DIR,
	OPT_DEV_LIMIT,
	OPT_HOST_LIMIT,
	OPT_WORKERS,
	OPT_WDTYPE,
	OPT_CHECK_FINITE,
	OPT_FPS,
	OPT_STG_BLOCKS,
	OPT_VIDEO_CFG,
	OPT_AUDIO_CFG,
	OPT_STG,
	OPT_RESCALE,
	OPT_MODALITY,
	OPT_SIGMAS,
	OPT_PASS_ORDER,
	OPT_SCHEDULE,
	OPT_COND_LATENT,
	OPT_COND_FRAMES,
	OPT_TILE,
	OPT_PRIORITIES,
	OPT_WATCHDOG,
	OPT_STATE,
	OPT_RESUME,
	OPT_GUIDANCE_HIGH,
	OPT_BOUNDARY,
	OPT_NOISE,
	OPT_IMAGE,
	OPT_EXPERT,
	OPT_LOAD_KEY,
	OPT_PREVIEW,
	OPT_SIM_ROOFLINE,
	OPT_PASSES_IN_FLIGHT,
	OPT_TOKEN_CHUNK,
	OPT_HELP,
};
#define DIT_CLI_SEEN_WORDS 2
_Static_assert(OPT_HELP - OPT_MODEL_DIR < 64 * DIT_CLI_SEEN_WORDS,
               "the seen bitmask holds 64 options a word");

/* Options shared by the commands; each command checks which ones it accepts. */
typedef struct dit_cli {
	dit_generate_opts gen;
	const char *inputs;
	const char *expert;
	int list;
	int help;
	int model_given;
	int rounds;                        /* calibrate: 0, the default */
	uint64_t seen[DIT_CLI_SEEN_WORDS]; /* bit per option id - OPT_MODEL_DIR */
} dit_cli;

/* Parses argv (after the command name) into *c; 0, or EXIT_USAGE with the message
 * printed. */
int dit_cli_parse(dit_cli *c, const char *cmd, int argc, char **argv);

/* EXIT_USAGE with a message naming the first option given that cmd does not take
 * (allowed[0..n)); 0 when every option given is allowed. */
int dit_cli_only(const dit_cli *c, const char *cmd, const int *allowed, size_t n);

/* Prints "ditstar CMD: " fmt (with arg) and the help hint; returns EXIT_USAGE. */
int dit_cli_usage(const char *cmd, const char *fmt, const char *arg);

#endif

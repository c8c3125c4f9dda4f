/* The ditstar command: generate, forward, info. Parses options, calls the library,
 * prints one line on error and exits non-zero (2 for usage errors, 1 otherwise). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dit_blas_env.h"
#include "dit_checkpoint.h"
#include "dit_calibrate.h"
#include "dit_cli_help.h"
#include "dit_cli_info.h"
#include "dit_run.h"
#include "dit_names.h"
#include "dit_synth.h"
#include "dit_weights.h"

#define EXIT_USAGE 2

/* The watchdog's verdict: a hang is an error, reported in one line. */
static void on_hang(void *arg, double idle_s)
{
	(void)arg;
	fprintf(stderr,
	        "ditstar: no task finished for %.0f s while tasks are pending: the run "
	        "is hung (--watchdog); stopping\n",
	        idle_s);
	_exit(3);
}

static int fail(const dit_error *err)
{
	fprintf(stderr, "ditstar: %s\n", err->msg);
	return err->code == DIT_EINTERRUPTED ? 130 : EXIT_FAILURE;
}

/* SIGINT/SIGTERM with a resume state: stop after the current step. */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "ditstar %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see 'ditstar %s --help')\n", cmd);
	return EXIT_USAGE;
}

/* Strict number parsing: the whole string, in range. */
static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	return dit_parse_i64(s, lo, hi, out);
}

/* "N" or "N,M,...": one positive size per pool (at most DIT_MAX_POOLS). */
static int parse_sizes(const char *s, int64_t *out)
{
	int64_t v[DIT_MAX_POOLS] = {0};
	int n = 0;
	for (const char *p = s;; n++) {
		char buf[24];
		size_t len = strcspn(p, ",");
		if (n == DIT_MAX_POOLS || len == 0 || len >= sizeof buf)
			return -1;
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (parse_i64(buf, 1, 100000, &v[n]))
			return -1;
		if (!p[len])
			break;
		p += len + 1;
	}
	memcpy(out, v, sizeof v);
	return 0;
}

static int parse_f64(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

/* A size in bytes: a number with an optional K, M, G or T suffix (powers of 1024); a
 * bare number counts MiB. */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v > 0) || v > 1e15)
		return -1;
	static const char units[] = "KMGT";
	const char *u = *end ? strchr(units, *end & ~0x20) : NULL;
	double unit = 1048576.0;
	if (u) {
		unit = 1024.0;
		for (const char *p = units; p < u; p++)
			unit *= 1024.0;
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	}
	if (*end)
		return -1;
	/* in range before the cast: at least a byte, at most 2^60 bytes (1 EiB) */
	double bytes = v * unit;
	if (!(bytes >= 1.0) || bytes > 0x1p60)
		return -1;
	*out = (size_t)bytes;
	return 0;
}

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
	OPT_WATCHDOG,
	OPT_STATE,
	OPT_RESUME,
	OPT_GUIDANCE_HIGH,
	OPT_BOUNDARY,
	OPT_NOISE,
	OPT_IMAGE,
	OPT_EXPERT,
	OPT_LOAD_KEY,
	OPT_HELP,
};
_Static_assert(OPT_HELP - OPT_MODEL_DIR < 64, "the seen bitmask holds 64 options");

static const struct option long_opts[] = {
    {"model-dir", required_argument, NULL, OPT_MODEL_DIR},
    {"model", required_argument, NULL, OPT_MODEL},
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"frames", required_argument, NULL, OPT_FRAMES},
    {"height", required_argument, NULL, OPT_HEIGHT},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"steps", required_argument, NULL, OPT_STEPS},
    {"solver", required_argument, NULL, OPT_SOLVER},
    {"guidance", required_argument, NULL, OPT_GUIDANCE},
    {"shift", required_argument, NULL, OPT_SHIFT},
    {"seed", required_argument, NULL, OPT_SEED},
    {"context", required_argument, NULL, OPT_CONTEXT},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"save-inputs", no_argument, NULL, OPT_SAVE_INPUTS},
    {"stats-json", required_argument, NULL, OPT_STATS},
    {"sched", required_argument, NULL, OPT_SCHED},
    {"ncpus", required_argument, NULL, OPT_NCPUS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"inputs", required_argument, NULL, OPT_INPUTS},
    {"list", no_argument, NULL, OPT_LIST},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"offload", required_argument, NULL, OPT_OFFLOAD},
    {"offload-chunk-size", required_argument, NULL, OPT_CHUNK},
    {"offload-chunk-size-double", required_argument, NULL, OPT_CHUNK_DOUBLE},
    {"offload-chunk-size-single", required_argument, NULL, OPT_CHUNK_SINGLE},
    {"embedded-guidance", required_argument, NULL, OPT_EMBEDDED},
    {"prefetch", required_argument, NULL, OPT_PREFETCH},
    {"disk-ram-slots", required_argument, NULL, OPT_SLOTS},
    {"resident-chunks", required_argument, NULL, OPT_RESIDENT},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"json", no_argument, NULL, OPT_JSON},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"offload-dir", required_argument, NULL, OPT_OFFLOAD_DIR},
    {"device-mem-limit", required_argument, NULL, OPT_DEV_LIMIT},
    {"host-mem-limit", required_argument, NULL, OPT_HOST_LIMIT},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"weight-dtype", required_argument, NULL, OPT_WDTYPE},
    {"check-finite", no_argument, NULL, OPT_CHECK_FINITE},
    {"fps", required_argument, NULL, OPT_FPS},
    {"stg-blocks", required_argument, NULL, OPT_STG_BLOCKS},
    {"video-guidance", required_argument, NULL, OPT_VIDEO_CFG},
    {"audio-guidance", required_argument, NULL, OPT_AUDIO_CFG},
    {"stg", required_argument, NULL, OPT_STG},
    {"rescale", required_argument, NULL, OPT_RESCALE},
    {"modality-guidance", required_argument, NULL, OPT_MODALITY},
    {"sigmas", required_argument, NULL, OPT_SIGMAS},
    {"pass-order", required_argument, NULL, OPT_PASS_ORDER},
    {"schedule", required_argument, NULL, OPT_SCHEDULE},
    {"condition-latent", required_argument, NULL, OPT_COND_LATENT},
    {"condition-frames", required_argument, NULL, OPT_COND_FRAMES},
    {"tile-tokens", required_argument, NULL, OPT_TILE},
    {"watchdog", required_argument, NULL, OPT_WATCHDOG},
    {"state", required_argument, NULL, OPT_STATE},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"guidance-high", required_argument, NULL, OPT_GUIDANCE_HIGH},
    {"boundary", required_argument, NULL, OPT_BOUNDARY},
    {"noise", required_argument, NULL, OPT_NOISE},
    {"image-latent", required_argument, NULL, OPT_IMAGE},
    {"expert", required_argument, NULL, OPT_EXPERT},
    {"load-key", required_argument, NULL, OPT_LOAD_KEY},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* Options shared by the commands; each command checks which ones it accepts. */
typedef struct cli {
	dit_generate_opts gen;
	const char *inputs;
	const char *expert;
	int list;
	int help;
	int model_given;
	int rounds;    /* calibrate: 0, the default */
	uint64_t seen; /* bit per option id - OPT_MODEL_DIR */
} cli;

static int parse(cli *c, const char *cmd, int argc, char **argv)
{
	dit_generate_opts *g = &c->gen;
	int64_t v;
	double d;
	dit_error err;
	optind = 1;
	opterr = 0;
	for (;;) {
		int idx = optind;
		int opt = getopt_long(argc, argv, "", long_opts, NULL);
		if (opt == -1)
			break;
		if (opt == '?' || opt == ':')
			return usage_error(cmd, "unknown option or missing value: %s",
			                   argv[idx < argc ? idx : argc - 1]);
		c->seen |= (uint64_t)1 << (opt - OPT_MODEL_DIR);
		switch (opt) {
		case OPT_MODEL_DIR: g->model_dir = optarg; break;
		case OPT_MODEL:
			g->model_name = optarg;
			c->model_given = 1;
			break;
		case OPT_CACHE_DIR: g->cache_dir = optarg; break;
		case OPT_FRAMES:
			if (parse_i64(optarg, 1, 100000, &v))
				return usage_error(
				    cmd, "--frames needs a positive integer, not '%s'", optarg);
			g->frames = v;
			break;
		case OPT_HEIGHT:
			if (parse_i64(optarg, 1, 1 << 20, &v))
				return usage_error(
				    cmd, "--height needs a positive integer, not '%s'", optarg);
			g->height = v;
			break;
		case OPT_WIDTH:
			if (parse_i64(optarg, 1, 1 << 20, &v))
				return usage_error(
				    cmd, "--width needs a positive integer, not '%s'", optarg);
			g->width = v;
			break;
		case OPT_STEPS:
			if (parse_i64(optarg, 1, 100000, &v))
				return usage_error(
				    cmd, "--steps needs a positive integer, not '%s'", optarg);
			g->steps = (int)v;
			break;
		case OPT_SOLVER:
			if (dit_solver_parse(&g->solver, optarg, &err))
				return usage_error(cmd, "--solver: %s", err.msg);
			break;
		case OPT_GUIDANCE:
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1e6)
				return usage_error(cmd, "--guidance needs a number >= 0, not '%s'",
				                   optarg);
			g->guidance = d;
			break;
		case OPT_GUIDANCE_HIGH:
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1e6)
				return usage_error(
				    cmd, "--guidance-high needs a number >= 0, not '%s'", optarg);
			g->guidance_high = d;
			break;
		case OPT_BOUNDARY:
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1.0)
				return usage_error(
				    cmd, "--boundary needs a number from 0 to 1, not '%s'", optarg);
			g->boundary = d;
			break;
		case OPT_NOISE: g->noise_path = optarg; break;
		case OPT_IMAGE: g->image_path = optarg; break;
		case OPT_EXPERT:
			if (strcmp(optarg, "high") != 0 && strcmp(optarg, "low") != 0)
				return usage_error(cmd, "--expert needs high or low, not '%s'",
				                   optarg);
			c->expert = optarg;
			break;
		case OPT_SHIFT:
			if (parse_f64(optarg, &d) || !(d > 0.0) || d > 1e6)
				return usage_error(cmd, "--shift needs a number > 0, not '%s'",
				                   optarg);
			g->shift = d;
			break;
		case OPT_SEED:
			if (parse_i64(optarg, 0, INT64_MAX, &v))
				return usage_error(cmd, "--seed needs an integer >= 0, not '%s'",
				                   optarg);
			g->seed = (uint64_t)v;
			break;
		case OPT_CONTEXT: g->context_path = optarg; break;
		case OPT_OUTPUT: g->output = optarg; break;
		case OPT_SAVE_INPUTS: g->save_inputs = 1; break;
		case OPT_STATS: g->stats_json = optarg; break;
		case OPT_SCHED: g->rt.sched = optarg; break;
		case OPT_NCPUS:
			if (parse_i64(optarg, 1, 4096, &v))
				return usage_error(
				    cmd, "--ncpus needs a positive integer, not '%s'", optarg);
			g->rt.ncpus = (int)v;
			break;
		case OPT_QUIET: g->quiet = 1; break;
		case OPT_INPUTS: c->inputs = optarg; break;
		case OPT_LIST: c->list = 1; break;
		case OPT_TRACE: g->trace_dir = optarg; break;
		case OPT_OFFLOAD:
			if (dit_offload_mode_parse(&g->offload.mode, optarg, &err))
				return usage_error(cmd, "--offload: %s", err.msg);
			break;
		case OPT_CHUNK:
			if (parse_sizes(optarg, g->offload.chunk_size))
				return usage_error(
				    cmd,
				    "--offload-chunk-size needs a positive integer (or "
				    "one per pool: N,M), not '%s'",
				    optarg);
			break;
		case OPT_CHUNK_DOUBLE:
		case OPT_CHUNK_SINGLE: {
			const char *pool = opt == OPT_CHUNK_DOUBLE ? "double" : "single";
			if (parse_i64(optarg, 1, 100000, &v))
				return usage_error(
				    cmd,
				    opt == OPT_CHUNK_DOUBLE
				        ? "--offload-chunk-size-double needs a positive "
				          "integer, not '%s'"
				        : "--offload-chunk-size-single needs a positive "
				          "integer, not '%s'",
				    optarg);
			int k = g->offload.nchunk_named < DIT_MAX_POOLS ? g->offload.nchunk_named++
			                                                : DIT_MAX_POOLS - 1;
			g->offload.chunk_named[k].name = pool;
			g->offload.chunk_named[k].size = v;
			break;
		}
		case OPT_EMBEDDED:
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1e6)
				return usage_error(
				    cmd, "--embedded-guidance needs a number >= 0, not '%s'",
				    optarg);
			g->embedded = d;
			break;
		case OPT_PREFETCH:
			if (parse_i64(optarg, 0, 64, &v))
				return usage_error(
				    cmd, "--prefetch needs an integer from 0 to 64, not '%s'",
				    optarg);
			g->offload.prefetch = (int)v;
			break;
		case OPT_SLOTS:
			if (parse_i64(optarg, 1, 1024, &v))
				return usage_error(
				    cmd, "--disk-ram-slots needs a positive integer, not '%s'",
				    optarg);
			g->offload.disk_ram_slots = (int)v;
			break;
		case OPT_RESIDENT:
			if (strcmp(optarg, "auto") == 0)
				g->offload.resident = -1;
			else if (parse_i64(optarg, 0, INT64_MAX / 2, &v))
				return usage_error(
				    cmd,
				    "--resident-chunks needs auto or an integer >= 0, "
				    "not '%s'",
				    optarg);
			else
				g->offload.resident = v;
			break;
		case OPT_OFFLOAD_DIR: g->offload.dir = optarg; break;
		case OPT_DEV_LIMIT:
			if (parse_size(optarg, &g->offload.device_mem_limit))
				return usage_error(
				    cmd,
				    "--device-mem-limit needs a size like 512M or 4G, "
				    "not '%s'",
				    optarg);
			break;
		case OPT_HOST_LIMIT:
			if (parse_size(optarg, &g->offload.host_mem_limit))
				return usage_error(cmd,
				                   "--host-mem-limit needs a size like 512M or 4G, "
				                   "not '%s'",
				                   optarg);
			break;
		case OPT_CHECK_FINITE: g->check_finite = 1; break;
		case OPT_DRY_RUN: g->dry_run = 1; break;
		case OPT_JSON: g->plan_json = 1; break;
		case OPT_ROUNDS:
			if (parse_i64(optarg, 1, 100, &v))
				return usage_error(
				    cmd, "--rounds needs an integer from 1 to 100, not '%s'",
				    optarg);
			c->rounds = (int)v;
			break;
		case OPT_FPS:
			if (parse_f64(optarg, &d) || !(d > 0.0) || d > 1000.0)
				return usage_error(
				    cmd, "--fps needs a frame rate in (0, 1000], not '%s'", optarg);
			g->fps = d;
			break;
		case OPT_STG_BLOCKS: g->stg_blocks = optarg; break;
		case OPT_VIDEO_CFG:
		case OPT_AUDIO_CFG:
		case OPT_STG:
		case OPT_RESCALE:
		case OPT_MODALITY: {
			static const char *const nm[] = {"--video-guidance", "--audio-guidance",
			                                 "--stg", "--rescale",
			                                 "--modality-guidance"};
			double *dst[] = {&g->video_cfg, &g->audio_cfg, &g->stg, &g->rescale,
			                 &g->modality};
			int k = opt - OPT_VIDEO_CFG;
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1000.0)
				return usage_error(cmd, "%s needs a number in 0..1000", nm[k]);
			*dst[k] = d;
			break;
		}
		case OPT_SIGMAS: g->sigmas = optarg; break;
		case OPT_SCHEDULE:
			if (strcmp(optarg, "karras") && strcmp(optarg, "linear"))
				return usage_error(cmd, "--schedule is karras or linear, not '%s'",
				                   optarg);
			g->schedule = optarg;
			break;
		case OPT_COND_LATENT: g->cond_path = optarg; break;
		case OPT_COND_FRAMES:
			if (parse_i64(optarg, 0, 1 << 20, &v))
				return usage_error(
				    cmd, "--condition-frames needs a count, not '%s'", optarg);
			g->cond_frames = v;
			break;
		case OPT_PASS_ORDER:
			if (strcmp(optarg, "chunk") && strcmp(optarg, "pass"))
				return usage_error(cmd, "--pass-order is chunk or pass, not '%s'",
				                   optarg);
			g->offload.pass_major = strcmp(optarg, "pass") == 0;
			break;
		case OPT_TILE:
			if (parse_i64(optarg, 0, INT64_MAX, &v))
				return usage_error(
				    cmd,
				    "--tile-tokens needs an integer >= 0 (0: one task "
				    "per op), not '%s'",
				    optarg);
			g->rt.tile_tokens = v;
			break;
		case OPT_STATE: g->state_path = optarg; break;
		case OPT_RESUME: g->resume_path = optarg; break;
		case OPT_WATCHDOG:
			if (parse_f64(optarg, &d) || !(d >= 0) || d > 1e7)
				return usage_error(cmd, "--watchdog needs seconds >= 0, not '%s'",
				                   optarg);
			g->rt.watchdog_s = d;
			break;
		case OPT_WORKERS:
			if (dit_workers_parse(&g->rt.workers, optarg, &err))
				return usage_error(cmd, "--workers: %s", err.msg);
			break;
		case OPT_WDTYPE:
			if (dit_weight_dtype_parse(&g->offload.weight_dtype, optarg, &err))
				return usage_error(cmd, "--weight-dtype: %s", err.msg);
			break;
		case OPT_LOAD_KEY:
			if (strcmp(optarg, "module") != 0 && strcmp(optarg, "ema") != 0)
				return usage_error(cmd, "--load-key needs module or ema, not '%s'",
				                   optarg);
			g->ck.load_key = optarg;
			break;
		case OPT_HELP: c->help = 1; break;
		}
	}
	if (optind < argc)
		return usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* Rejects options that cmd does not take. */
static int only(const cli *c, const char *cmd, const int *allowed, size_t n)
{
	for (int o = OPT_MODEL_DIR; o <= OPT_HELP; o++) {
		if (!(c->seen & ((uint64_t)1 << (o - OPT_MODEL_DIR))))
			continue;
		int ok = 0;
		for (size_t i = 0; i < n; i++)
			ok |= allowed[i] == o;
		if (!ok) {
			char name[40];
			snprintf(name, sizeof name, "--%s", long_opts[o - OPT_MODEL_DIR].name);
			return usage_error(cmd, "option %s does not apply here", name);
		}
	}
	return 0;
}

/* generate, `ditstar plan` (generate --dry-run) or `ditstar calibrate`. */
enum { CMD_GENERATE, CMD_PLAN, CMD_CALIBRATE };
static int cmd_generate(int argc, char **argv, int which)
{
	int plan = which == CMD_PLAN;
	cli c;
	memset(&c, 0, sizeof c);
	dit_generate_opts_default(&c.gen);
	const char *cmd = plan ? "plan" : which == CMD_CALIBRATE ? "calibrate" : "generate";
	int rc = parse(&c, cmd, argc, argv);
	if (rc)
		return rc;
	if (c.help) {
		fputs(plan                     ? dit_cli_help_plan
		      : which == CMD_CALIBRATE ? dit_cli_help_calibrate
		                               : dit_cli_help_generate,
		      stdout);
		return 0;
	}
	static const int allowed[] = {
	    OPT_MODEL_DIR,    OPT_MODEL,      OPT_CACHE_DIR, OPT_FRAMES,        OPT_HEIGHT,
	    OPT_WIDTH,        OPT_STEPS,      OPT_SOLVER,    OPT_GUIDANCE,      OPT_SHIFT,
	    OPT_SEED,         OPT_CONTEXT,    OPT_OUTPUT,    OPT_SAVE_INPUTS,   OPT_STATS,
	    OPT_SCHED,        OPT_NCPUS,      OPT_QUIET,     OPT_TRACE,         OPT_OFFLOAD,
	    OPT_CHUNK,        OPT_PREFETCH,   OPT_SLOTS,     OPT_RESIDENT,      OPT_OFFLOAD_DIR,
	    OPT_DEV_LIMIT,    OPT_HOST_LIMIT, OPT_WORKERS,   OPT_WDTYPE,        OPT_CHECK_FINITE,
	    OPT_WATCHDOG,     OPT_STATE,      OPT_RESUME,    OPT_GUIDANCE_HIGH, OPT_BOUNDARY,
	    OPT_NOISE,        OPT_IMAGE,      OPT_TILE,      OPT_HELP,          OPT_CHUNK_DOUBLE,
	    OPT_CHUNK_SINGLE, OPT_EMBEDDED,   OPT_LOAD_KEY,  OPT_FPS,           OPT_STG_BLOCKS,
	    OPT_VIDEO_CFG,    OPT_AUDIO_CFG,  OPT_STG,       OPT_RESCALE,       OPT_MODALITY,
	    OPT_SIGMAS,       OPT_PASS_ORDER, OPT_SCHEDULE,  OPT_COND_LATENT,   OPT_COND_FRAMES,
	    OPT_DRY_RUN,      OPT_JSON,       OPT_ROUNDS};
	if ((rc = only(&c, cmd, allowed, sizeof allowed / sizeof allowed[0])))
		return rc;
	if (c.gen.model_dir && c.model_given)
		return usage_error(cmd, "give --model-dir or --model, not both%s", "");
	c.gen.dry_run |= plan;
	if (c.rounds && which != CMD_CALIBRATE)
		return usage_error(cmd, "--rounds is an option of 'ditstar calibrate'%s", "");
	if (which == CMD_CALIBRATE && (c.gen.dry_run || c.gen.plan_json))
		return usage_error(cmd, "--dry-run and --json are options of 'ditstar plan'%s", "");
	if (c.gen.plan_json && !c.gen.dry_run)
		return usage_error(cmd, "--json needs --dry-run (or 'ditstar plan')%s", "");
	if (c.gen.dry_run && (c.gen.output || c.gen.stats_json || c.gen.trace_dir ||
	                      c.gen.state_path || c.gen.resume_path))
		return usage_error(cmd,
		                   "a plan runs nothing: --output, --stats-json, --trace, --state "
		                   "and --resume do not apply%s",
		                   "");
	if (c.gen.save_inputs && !c.gen.output)
		return usage_error(cmd, "--save-inputs needs --output%s", "");
	c.gen.progress = !c.gen.quiet && isatty(STDERR_FILENO);
	c.gen.rt.on_hang = on_hang;
	c.gen.rt.check_models = 1;
	if (c.gen.state_path || c.gen.resume_path) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_stop_signal;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		c.gen.stop = &stop_requested;
	}
	dit_error err;
	dit_error_clear(&err);
	if (which == CMD_CALIBRATE) {
		if (!c.gen.steps)
			c.gen.steps = 5;
		if (dit_calibrate(&c.gen, c.rounds ? c.rounds : 12, stdout, &err))
			return fail(&err);
		return 0;
	}
	if (dit_generate(&c.gen, &err))
		return fail(&err);
	return 0;
}

static int cmd_forward(int argc, char **argv)
{
	cli c;
	memset(&c, 0, sizeof c);
	dit_generate_opts_default(&c.gen);
	int rc = parse(&c, "forward", argc, argv);
	if (rc)
		return rc;
	if (c.help) {
		fputs(dit_cli_help_forward, stdout);
		return 0;
	}
	static const int allowed[] = {
	    OPT_MODEL_DIR, OPT_INPUTS,       OPT_OUTPUT,       OPT_STATS,     OPT_TRACE,
	    OPT_SCHED,     OPT_NCPUS,        OPT_OFFLOAD,      OPT_CHUNK,     OPT_PREFETCH,
	    OPT_SLOTS,     OPT_RESIDENT,     OPT_OFFLOAD_DIR,  OPT_DEV_LIMIT, OPT_HOST_LIMIT,
	    OPT_WORKERS,   OPT_WDTYPE,       OPT_CHECK_FINITE, OPT_EXPERT,    OPT_TILE,
	    OPT_WATCHDOG,  OPT_CHUNK_DOUBLE, OPT_CHUNK_SINGLE, OPT_HELP,      OPT_LOAD_KEY,
	    OPT_FPS,       OPT_STG_BLOCKS};
	if ((rc = only(&c, "forward", allowed, sizeof allowed / sizeof allowed[0])))
		return rc;
	if (!c.gen.model_dir || !c.inputs || !c.gen.output)
		return usage_error("forward", "--model-dir, --inputs and --output are required%s",
		                   "");
	c.gen.rt.on_hang = on_hang;
	c.gen.rt.check_models = 1;
	dit_forward_opts f = {.model_dir = c.gen.model_dir,
	                      .inputs = c.inputs,
	                      .expert = c.expert,
	                      .output = c.gen.output,
	                      .stats_json = c.gen.stats_json,
	                      .trace_dir = c.gen.trace_dir,
	                      .offload = c.gen.offload,
	                      .check_finite = c.gen.check_finite,
	                      .fps = c.gen.fps,
	                      .stg_blocks = c.gen.stg_blocks,
	                      .rt = c.gen.rt,
	                      .ck = c.gen.ck};
	dit_error err;
	dit_error_clear(&err);
	if (dit_forward(&f, &err))
		return fail(&err);
	return 0;
}

static int cmd_info(int argc, char **argv)
{
	cli c;
	memset(&c, 0, sizeof c);
	dit_generate_opts_default(&c.gen);
	c.gen.model_name = NULL;
	int rc = parse(&c, "info", argc, argv);
	if (rc)
		return rc;
	if (c.help) {
		fputs(dit_cli_help_info, stdout);
		return 0;
	}
	static const int allowed[] = {OPT_MODEL_DIR, OPT_MODEL, OPT_LIST, OPT_FRAMES,
	                              OPT_HEIGHT,    OPT_WIDTH, OPT_HELP, OPT_LOAD_KEY};
	if ((rc = only(&c, "info", allowed, sizeof allowed / sizeof allowed[0])))
		return rc;
	if (c.list) {
		for (size_t i = 0; i < dit_preset_count(); i++) {
			const dit_preset *p = dit_preset_get(i);
			printf("%-18s %-16s %s\n", p->name, p->model, p->about);
		}
		return 0;
	}
	if (!!c.gen.model_dir == !!c.gen.model_name)
		return usage_error("info", "give one of --model-dir, --model or --list%s", "");
	dit_error err;
	dit_error_clear(&err);
	if (dit_cli_info(c.gen.model_dir, c.gen.model_name, &c.gen.ck, c.gen.frames, c.gen.height,
	                 c.gen.width, &err))
		return fail(&err);
	return 0;
}

static int run_command(int argc, char **argv)
{
	dit_blas_env_prepare(argv);
	/* A file-size limit (ulimit -f) makes writes fail with EFBIG, reported as errors,
	 * instead of killing the process. */
	signal(SIGXFSZ, SIG_IGN);
	/* StarPU's calibration notes are for developers; STARPU_SILENT=0 shows them. */
	setenv("STARPU_SILENT", "1", 0);
	if (argc < 2)
		return cmd_generate(1, argv, CMD_GENERATE);
	const char *cmd = argv[1];
	if (strcmp(cmd, "generate") == 0)
		return cmd_generate(argc - 1, argv + 1, CMD_GENERATE);
	if (strcmp(cmd, "plan") == 0)
		return cmd_generate(argc - 1, argv + 1, CMD_PLAN);
	if (strcmp(cmd, "calibrate") == 0)
		return cmd_generate(argc - 1, argv + 1, CMD_CALIBRATE);
	if (strcmp(cmd, "forward") == 0)
		return cmd_forward(argc - 1, argv + 1);
	if (strcmp(cmd, "info") == 0)
		return cmd_info(argc - 1, argv + 1);
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		fputs(dit_cli_help_main, stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("ditstar %s\n", PACKAGE_VERSION);
		return 0;
	}
	fprintf(stderr, "ditstar: unknown command '%s' (see 'ditstar --help')\n", cmd);
	return EXIT_USAGE;
}

/* Output to standard output is buffered: a write that failed (a full disk, /dev/full)
 * shows only here, and is an error like any other. */
int main(int argc, char **argv)
{
	int rc = run_command(argc, argv);
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int e = errno ? errno : EIO;
		if (rc == 0) {
			fprintf(stderr, "ditstar: cannot write to standard output: %s\n",
			        strerror(e));
			rc = EXIT_FAILURE;
		}
	}
	return rc;
}

/* The ditstar command line's options: strict number and size parsing, the option
 * table and the parser every command shares (see dit_cli_parse.h). */
#define _POSIX_C_SOURCE 200809L
#include "dit_cli_parse.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dit_checkpoint.h"
#include "dit_names.h"
#include "dit_weights.h"

int dit_cli_usage(const char *cmd, const char *fmt, const char *arg)
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
    {"passes-in-flight", required_argument, NULL, OPT_PASSES_IN_FLIGHT},
    {"token-chunk", required_argument, NULL, OPT_TOKEN_CHUNK},
    {"ffn-chunk-tokens", required_argument, NULL, OPT_TOKEN_CHUNK}, /* its first name */
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
    {"priorities", required_argument, NULL, OPT_PRIORITIES},
    {"sim-roofline", required_argument, NULL, OPT_SIM_ROOFLINE},
    {"watchdog", required_argument, NULL, OPT_WATCHDOG},
    {"state", required_argument, NULL, OPT_STATE},
    {"resume", required_argument, NULL, OPT_RESUME},
    {"guidance-high", required_argument, NULL, OPT_GUIDANCE_HIGH},
    {"boundary", required_argument, NULL, OPT_BOUNDARY},
    {"noise", required_argument, NULL, OPT_NOISE},
    {"image-latent", required_argument, NULL, OPT_IMAGE},
    {"expert", required_argument, NULL, OPT_EXPERT},
    {"load-key", required_argument, NULL, OPT_LOAD_KEY},
    {"preview", required_argument, NULL, OPT_PREVIEW},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

int dit_cli_parse(dit_cli *c, const char *cmd, int argc, char **argv)
{
	dit_generate_opts *g = &c->gen;
	int64_t v;
	double d;
	dit_error err;
	optind = 1;
	opterr = 0;
	for (;;) {
		int idx = optind;
		/* ":" first: a missing value is ':', an unknown option '?' */
		int opt = getopt_long(argc, argv, ":", long_opts, NULL);
		if (opt == -1)
			break;
		const char *arg = argv[idx < argc ? idx : argc - 1];
		if (opt == ':')
			return dit_cli_usage(cmd, "%s needs a value", arg);
		if (opt == '?') {
			/* "--quiet=1": an option that takes no value was given one */
			const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
			for (const struct option *lo = long_opts; eq && lo->name; lo++)
				if (lo->has_arg == no_argument &&
				    strlen(lo->name) == (size_t)(eq - arg - 2) &&
				    strncmp(lo->name, arg + 2, (size_t)(eq - arg - 2)) == 0)
					return dit_cli_usage(cmd, "--%s takes no value", lo->name);
			return dit_cli_usage(cmd, "unknown option: %s", arg);
		}
		c->seen[(opt - OPT_MODEL_DIR) / 64] |= (uint64_t)1 << ((opt - OPT_MODEL_DIR) % 64);
		switch (opt) {
		case OPT_MODEL_DIR: g->model_dir = optarg; break;
		case OPT_MODEL:
			g->model_name = optarg;
			c->model_given = 1;
			break;
		case OPT_CACHE_DIR: g->cache_dir = optarg; break;
		case OPT_FRAMES:
			if (parse_i64(optarg, 1, 100000, &v))
				return dit_cli_usage(
				    cmd, "--frames needs a positive integer, not '%s'", optarg);
			g->frames = v;
			break;
		case OPT_HEIGHT:
			if (parse_i64(optarg, 1, 1 << 20, &v))
				return dit_cli_usage(
				    cmd, "--height needs a positive integer, not '%s'", optarg);
			g->height = v;
			break;
		case OPT_WIDTH:
			if (parse_i64(optarg, 1, 1 << 20, &v))
				return dit_cli_usage(
				    cmd, "--width needs a positive integer, not '%s'", optarg);
			g->width = v;
			break;
		case OPT_STEPS:
			if (parse_i64(optarg, 1, 100000, &v))
				return dit_cli_usage(
				    cmd, "--steps needs a positive integer, not '%s'", optarg);
			g->steps = (int)v;
			break;
		case OPT_SOLVER:
			if (dit_solver_parse(&g->solver, optarg, &err))
				return dit_cli_usage(cmd, "--solver: %s", err.msg);
			break;
		case OPT_GUIDANCE:
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1e6)
				return dit_cli_usage(
				    cmd, "--guidance needs a number >= 0, not '%s'", optarg);
			g->guidance = d;
			break;
		case OPT_GUIDANCE_HIGH:
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1e6)
				return dit_cli_usage(
				    cmd, "--guidance-high needs a number >= 0, not '%s'", optarg);
			g->guidance_high = d;
			break;
		case OPT_BOUNDARY:
			if (parse_f64(optarg, &d) || !(d >= 0.0) || d > 1.0)
				return dit_cli_usage(
				    cmd, "--boundary needs a number from 0 to 1, not '%s'", optarg);
			g->boundary = d;
			break;
		case OPT_NOISE: g->noise_path = optarg; break;
		case OPT_IMAGE: g->image_path = optarg; break;
		case OPT_EXPERT:
			if (strcmp(optarg, "high") != 0 && strcmp(optarg, "low") != 0)
				return dit_cli_usage(cmd, "--expert needs high or low, not '%s'",
				                     optarg);
			c->expert = optarg;
			break;
		case OPT_SHIFT:
			if (parse_f64(optarg, &d) || !(d > 0.0) || d > 1e6)
				return dit_cli_usage(cmd, "--shift needs a number > 0, not '%s'",
				                     optarg);
			g->shift = d;
			break;
		case OPT_SEED:
			if (parse_i64(optarg, 0, INT64_MAX, &v))
				return dit_cli_usage(cmd, "--seed needs an integer >= 0, not '%s'",
				                     optarg);
			g->seed = (uint64_t)v;
			break;
		case OPT_CONTEXT: g->context_path = optarg; break;
		case OPT_OUTPUT: g->output = optarg; break;
		case OPT_SAVE_INPUTS: g->save_inputs = 1; break;
		case OPT_STATS: g->stats_json = optarg; break;
		case OPT_PREVIEW: g->preview_path = optarg; break;
		case OPT_SCHED: g->rt.sched = optarg; break;
		case OPT_NCPUS:
			if (parse_i64(optarg, 1, 4096, &v))
				return dit_cli_usage(
				    cmd, "--ncpus needs a positive integer, not '%s'", optarg);
			g->rt.ncpus = (int)v;
			break;
		case OPT_QUIET: g->quiet = 1; break;
		case OPT_INPUTS: c->inputs = optarg; break;
		case OPT_LIST: c->list = 1; break;
		case OPT_TRACE: g->trace_dir = optarg; break;
		case OPT_OFFLOAD:
			if (dit_offload_mode_parse(&g->offload.mode, optarg, &err))
				return dit_cli_usage(cmd, "--offload: %s", err.msg);
			break;
		case OPT_CHUNK:
			if (parse_sizes(optarg, g->offload.chunk_size))
				return dit_cli_usage(
				    cmd,
				    "--offload-chunk-size needs a positive integer (or "
				    "one per pool: N,M), not '%s'",
				    optarg);
			break;
		case OPT_CHUNK_DOUBLE:
		case OPT_CHUNK_SINGLE: {
			const char *pool = opt == OPT_CHUNK_DOUBLE ? "double" : "single";
			if (parse_i64(optarg, 1, 100000, &v))
				return dit_cli_usage(
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
				return dit_cli_usage(
				    cmd, "--embedded-guidance needs a number >= 0, not '%s'",
				    optarg);
			g->embedded = d;
			break;
		case OPT_PREFETCH:
			if (parse_i64(optarg, 0, 64, &v))
				return dit_cli_usage(
				    cmd, "--prefetch needs an integer from 0 to 64, not '%s'",
				    optarg);
			g->offload.prefetch = (int)v;
			break;
		case OPT_PASSES_IN_FLIGHT:
			if (parse_i64(optarg, 0, 64, &v))
				return dit_cli_usage(
				    cmd,
				    "--passes-in-flight needs an integer from 0 to 64, "
				    "not '%s'",
				    optarg);
			g->offload.passes_in_flight = (int)v;
			break;
		case OPT_TOKEN_CHUNK:
			if (parse_i64(optarg, 0, INT32_MAX, &v))
				return dit_cli_usage(cmd,
				                     "--token-chunk needs a number of tokens >= 0, "
				                     "not '%s'",
				                     optarg);
			g->offload.chunk_rows = v;
			break;
		case OPT_SLOTS:
			if (parse_i64(optarg, 1, 1024, &v))
				return dit_cli_usage(
				    cmd, "--disk-ram-slots needs a positive integer, not '%s'",
				    optarg);
			g->offload.disk_ram_slots = (int)v;
			break;
		case OPT_RESIDENT:
			if (strcmp(optarg, "auto") == 0)
				g->offload.resident = -1;
			else if (parse_i64(optarg, 0, INT64_MAX / 2, &v))
				return dit_cli_usage(
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
				return dit_cli_usage(
				    cmd,
				    "--device-mem-limit needs a size like 512M or 4G, "
				    "not '%s'",
				    optarg);
			break;
		case OPT_HOST_LIMIT:
			if (parse_size(optarg, &g->offload.host_mem_limit))
				return dit_cli_usage(
				    cmd,
				    "--host-mem-limit needs a size like 512M or 4G, "
				    "not '%s'",
				    optarg);
			break;
		case OPT_CHECK_FINITE: g->check_finite = 1; break;
		case OPT_DRY_RUN: g->dry_run = 1; break;
		case OPT_JSON: g->plan_json = 1; break;
		case OPT_ROUNDS:
			if (parse_i64(optarg, 1, 100, &v))
				return dit_cli_usage(
				    cmd, "--rounds needs an integer from 1 to 100, not '%s'",
				    optarg);
			c->rounds = (int)v;
			break;
		case OPT_FPS:
			if (parse_f64(optarg, &d) || !(d > 0.0) || d > 1000.0)
				return dit_cli_usage(
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
				return dit_cli_usage(cmd, "%s needs a number in 0..1000", nm[k]);
			*dst[k] = d;
			break;
		}
		case OPT_SIGMAS: g->sigmas = optarg; break;
		case OPT_SCHEDULE:
			if (strcmp(optarg, "karras") && strcmp(optarg, "linear"))
				return dit_cli_usage(
				    cmd, "--schedule is karras or linear, not '%s'", optarg);
			g->schedule = optarg;
			break;
		case OPT_COND_LATENT: g->cond_path = optarg; break;
		case OPT_COND_FRAMES:
			if (parse_i64(optarg, 0, 1 << 20, &v))
				return dit_cli_usage(
				    cmd, "--condition-frames needs a count, not '%s'", optarg);
			g->cond_frames = v;
			break;
		case OPT_PASS_ORDER:
			if (strcmp(optarg, "chunk") && strcmp(optarg, "pass"))
				return dit_cli_usage(cmd, "--pass-order is chunk or pass, not '%s'",
				                     optarg);
			g->offload.pass_major = strcmp(optarg, "pass") == 0;
			break;
		case OPT_TILE:
			if (parse_i64(optarg, 0, INT64_MAX, &v))
				return dit_cli_usage(
				    cmd,
				    "--tile-tokens needs an integer >= 0 (0: one task "
				    "per op), not '%s'",
				    optarg);
			g->rt.tile_tokens = v;
			break;
		case OPT_PRIORITIES:
			if (strcmp(optarg, "none") && strcmp(optarg, "critical-path") &&
			    strcmp(optarg, "op-class"))
				return dit_cli_usage(cmd,
				                     "--priorities is none, critical-path or "
				                     "op-class, not '%s'",
				                     optarg);
			g->rt.priorities =
			    strcmp(optarg, "critical-path") == 0 ? DIT_PRIORITIES_CRITICAL_PATH
			    : strcmp(optarg, "op-class") == 0    ? DIT_PRIORITIES_OP_CLASS
			                                         : DIT_PRIORITIES_NONE;
			break;
		case OPT_SIM_ROOFLINE:
#ifndef DIT_SIMGRID
			return dit_cli_usage(cmd,
			                     "--sim-roofline is ditstar-sim's (a simulation "
			                     "option)%s",
			                     "");
#endif
			g->rt.sim_roofline = optarg;
			break;
		case OPT_STATE: g->state_path = optarg; break;
		case OPT_RESUME: g->resume_path = optarg; break;
		case OPT_WATCHDOG:
			if (parse_f64(optarg, &d) || !(d >= 0) || d > 1e7)
				return dit_cli_usage(cmd, "--watchdog needs seconds >= 0, not '%s'",
				                     optarg);
			g->rt.watchdog_s = d;
			break;
		case OPT_WORKERS:
			if (dit_workers_parse(&g->rt.workers, optarg, &err))
				return dit_cli_usage(cmd, "--workers: %s", err.msg);
			break;
		case OPT_WDTYPE:
			if (dit_weight_dtype_parse(&g->offload.weight_dtype, optarg, &err))
				return dit_cli_usage(cmd, "--weight-dtype: %s", err.msg);
			break;
		case OPT_LOAD_KEY:
			if (strcmp(optarg, "module") != 0 && strcmp(optarg, "ema") != 0)
				return dit_cli_usage(
				    cmd, "--load-key needs module or ema, not '%s'", optarg);
			g->ck.load_key = optarg;
			break;
		case OPT_HELP: c->help = 1; break;
		}
	}
	if (optind < argc)
		return dit_cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int dit_cli_only(const dit_cli *c, const char *cmd, const int *allowed, size_t n)
{
	for (int o = OPT_MODEL_DIR; o <= OPT_HELP; o++) {
		if (!(c->seen[(o - OPT_MODEL_DIR) / 64] &
		      ((uint64_t)1 << ((o - OPT_MODEL_DIR) % 64))))
			continue;
		int ok = 0;
		for (size_t i = 0; i < n; i++)
			ok |= allowed[i] == o;
		if (!ok) {
			char name[40] = "--?";
			for (const struct option *lo = long_opts; lo->name; lo++)
				if (lo->val == o)
					snprintf(name, sizeof name, "--%s", lo->name);
			return dit_cli_usage(cmd, "option %s does not apply here", name);
		}
	}
	return 0;
}

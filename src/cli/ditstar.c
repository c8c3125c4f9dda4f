/* The ditstar command: generate, forward, info. Parses options, calls the library,
 * prints one line on error and exits non-zero (2 for usage errors, 1 otherwise). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dit_trace_summary.h"
#include "dit_blas_env.h"
#include "dit_checkpoint.h"
#include "dit_calibrate.h"
#include "dit_cli_help.h"
#include "dit_cli_info.h"
#include "dit_cli_parse.h"
#include "dit_cli_tmp.h"
#include "dit_run.h"
#include "dit_names.h"
#include "dit_progress.h"
#include "dit_synth.h"
#include "dit_version.h"
#include "dit_weights.h"
#ifdef DIT_SIMGRID
/* ditstar-sim: this main() stays the program's (its options are not SimGrid's), and
 * starpu_init attaches it to the simulation; SimGrid's own notes are kept to warnings */
#include <xbt/log.h>
#undef main /* starpu.h (through dit_weights.h) renames it to starpu_main */
/* StarPU's switch for its notes, which it reads only after the first one of a process
 * that attaches to SimGrid ("...should be compiled with starpu_simgrid_wrap.h": the
 * wrapped main would hand --help and --version to SimGrid instead of ditstar) */
extern int _starpu_silent __attribute__((weak));
#endif

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
	return err->code == DIT_EINTERRUPTED ? 130
	       : err->code == DIT_EUSAGE     ? EXIT_USAGE
	                                     : EXIT_FAILURE;
}

/* SIGINT/SIGTERM. With a state file the run stops after the current step (the library
 * saves it, then reports where) and a second signal stops at once; without one the run
 * stops at once, saying that nothing can be resumed. "At once" waits for models_lock:
 * while StarPU writes its performance models the runtime holds it, and a process ended
 * then would leave a model cut short that every later run refuses. The signals are
 * blocked in every thread started after this (StarPU's inherit the mask) and taken by
 * one thread of the command's with sigwait, where a lock can be waited for. Threads
 * started before main (OpenBLAS's pool, at load) do not block them: a signal the
 * kernel gives one of those runs stop_forward there, which sends it on to the waiting
 * thread; and the signals are taken even when the shell started ditstar with them
 * ignored (a background job). An output being written when the process stops at once is
 * not left behind as its temporary file. */
static volatile sig_atomic_t stop_requested;
static pthread_mutex_t models_lock = PTHREAD_MUTEX_INITIALIZER;
static int stop_saves;
/* [0]: stopping after this step; [1]: stopped now; [2]: stopped before any state */
static char stop_msg[3][1024];
static size_t stop_len[3];
static const char *stop_state;
static sigset_t stop_set;

static pthread_t stop_thread;

/* On a thread that does not block the signals: to the thread that waits for them
 * (pthread_kill is async-signal-safe). */
static void stop_forward(int sig)
{
	int e = errno;
	pthread_kill(stop_thread, sig);
	errno = e;
}

static void say_stop(int k)
{
	ssize_t r = write(STDERR_FILENO, stop_msg[k], stop_len[k]);
	(void)r;
}

static void *stop_thread_main(void *arg)
{
	(void)arg;
	for (;;) {
		int sig;
		if (sigwait(&stop_set, &sig) != 0)
			continue;
		int now = !stop_saves || stop_requested;
		stop_requested = 1;
		if (!now) {
			say_stop(0);
			continue;
		}
		pthread_mutex_lock(&models_lock); /* never released: the process ends */
		dit_cli_tmp_remove_open();        /* an output half-written */
		say_stop(stop_saves && access(stop_state, F_OK) != 0 ? 2 : 1);
		_exit(130);
	}
	return NULL;
}

/* Sets the messages for this run and starts the thread that takes the signals: state
 * is the state file (NULL: none), bar whether a progress bar is on the line the
 * message follows. */
static void stop_signals_set(dit_runtime_opts *rt, const char *state, const char *what_lost,
                             int bar)
{
	const char *nl = bar ? "\n" : "";
	stop_saves = state != NULL;
	stop_state = state;
	if (state) {
		snprintf(stop_msg[0], sizeof stop_msg[0],
		         "%sditstar: stopping after the current step; its state goes to %s "
		         "(Ctrl-C again stops at once)\n",
		         nl, state);
		snprintf(stop_msg[1], sizeof stop_msg[1],
		         "%sditstar: stopped; %s holds the state of the last finished step "
		         "(continue with --resume %s)\n",
		         nl, state, state);
		snprintf(stop_msg[2], sizeof stop_msg[2],
		         "%sditstar: stopped before the first step finished; no state saved\n", nl);
	} else {
		snprintf(stop_msg[1], sizeof stop_msg[1], "%sditstar: interrupted; %s\n", nl,
		         what_lost);
	}
	for (int i = 0; i < 3; i++)
		stop_len[i] = strlen(stop_msg[i]);
	rt->models_lock = &models_lock;
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &stop_set, NULL) == 0 &&
	    pthread_create(&stop_thread, NULL, stop_thread_main, NULL) == 0) {
		pthread_detach(stop_thread);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = stop_forward;
		sigfillset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	} else { /* no thread: the default action (the process ends) */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		pthread_sigmask(SIG_UNBLOCK, &stop_set, NULL);
	}
}

/* generate, `ditstar plan` (generate --dry-run) or `ditstar calibrate`. */
enum { CMD_GENERATE, CMD_PLAN, CMD_CALIBRATE };

/* The options that do not go together, each with its own message. */
static int generate_conflicts(const dit_cli *c, const char *cmd, int which)
{
	const dit_generate_opts *g = &c->gen;
	if (g->model_dir && dit_cli_given(c, "model"))
		return dit_cli_usage(cmd, "give --model-dir or --model, not both%s", "");
	if (g->rt.sim_roofline && (g->dry_run || which == CMD_CALIBRATE))
		return dit_cli_usage(cmd,
		                     "--sim-roofline sets the lengths of a simulated generate; "
		                     "plan and calibrate price the calibrated models%s",
		                     "");
	if (c->rounds && which != CMD_CALIBRATE)
		return dit_cli_usage(cmd, "--rounds is an option of 'ditstar calibrate'%s", "");
	if (which == CMD_CALIBRATE && (g->dry_run || g->plan_json))
		return dit_cli_usage(cmd, "--dry-run and --json are options of 'ditstar plan'%s",
		                     "");
	if (g->plan_json && !g->dry_run)
		return dit_cli_usage(cmd, "--json needs --dry-run (or 'ditstar plan')%s", "");
	if (g->dry_run && (g->output || g->stats_json || g->trace_dir || g->state_path ||
	                   g->resume_path || g->preview_path))
		return dit_cli_usage(
		    cmd,
		    "a plan runs nothing: --output, --stats-json, --trace, --state, "
		    "--resume and --preview do not apply%s",
		    "");
	if (which == CMD_CALIBRATE && g->preview_path)
		return dit_cli_usage(cmd, "--preview is an option of 'ditstar generate'%s", "");
	if (g->save_inputs && !g->output)
		return dit_cli_usage(cmd, "--save-inputs needs --output%s", "");
	/* the rest by the option table: plan takes what generate --dry-run does */
	return dit_cli_check(c, cmd,
	                     which == CMD_CALIBRATE                 ? DIT_CLI_CALIBRATE
	                     : which == CMD_GENERATE && !g->dry_run ? DIT_CLI_GENERATE
	                                                            : DIT_CLI_PLAN);
}

#ifdef DIT_SIMGRID
/* What ditstar-sim does not simulate. */
static int generate_sim_only(const dit_cli *c, const char *cmd, int which)
{
	const dit_generate_opts *g = &c->gen;
	if (which == CMD_CALIBRATE)
		return dit_cli_usage(cmd, "ditstar-sim simulates; calibrate with ditstar%s", "");
	if (g->output || g->state_path || g->resume_path || g->preview_path)
		return dit_cli_usage(cmd,
		                     "ditstar-sim computes no latents: --output, --state, "
		                     "--resume and --preview do not apply%s",
		                     "");
	if (g->offload.mode == DIT_OFFLOAD_DISK || g->offload.mode == DIT_OFFLOAD_AUTO)
		return dit_cli_usage(cmd,
		                     "ditstar-sim: --offload %s is not simulated (StarPU's SimGrid "
		                     "mode has no disk node in its platform)",
		                     g->offload.mode == DIT_OFFLOAD_DISK ? "disk" : "auto");
	return 0;
}
#endif

/* --version or --help given: prints it and answers 1 (the command does nothing else). */
static int said_help(const dit_cli *c, const char *cmd)
{
	if (c->version)
		printf("ditstar %s\n", ditstar_version());
	else if (c->help)
		dit_cli_help_command(stdout, dit_cli_command_find(cmd));
	return c->help || c->version;
}

/* Whether argv[1 ..] holds flag (the commands without an option table). */
static int has_flag(int argc, char **argv, const char *flag)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], flag) == 0)
			return 1;
	return 0;
}

/* The run of generate, plan or calibrate once its options are parsed. */
static int generate_run(dit_cli *c, const char *cmd, int which)
{
	if (said_help(c, cmd))
		return 0;
	if (c->gen.rt.sched && strcmp(c->gen.rt.sched, "help") == 0) {
		dit_runtime_sched_list(stdout);
		return 0;
	}
	c->gen.dry_run |= which == CMD_PLAN;
	int rc = generate_conflicts(c, cmd, which);
#ifdef DIT_SIMGRID
	if (!rc)
		rc = generate_sim_only(c, cmd, which);
#endif
	if (rc)
		return rc;
	dit_generate_opts *g = &c->gen;
	g->progress = g->quiet                ? DIT_PROGRESS_NONE
	              : isatty(STDERR_FILENO) ? DIT_PROGRESS_BAR
	                                      : DIT_PROGRESS_LINES;
	g->rt.on_hang = on_hang;
	g->rt.check_models = 1;
	if (!g->dry_run) {
		const char *state = g->state_path ? g->state_path : g->resume_path;
		stop_signals_set(&g->rt, state,
		                 "no state saved: use --state FILE to make a run resumable",
		                 g->progress == DIT_PROGRESS_BAR);
		if (state)
			g->stop = &stop_requested;
	}
	dit_error err;
	dit_error_clear(&err);
	if (which == CMD_CALIBRATE) {
		if (!g->steps)
			g->steps = 5;
		if (dit_calibrate(g, c->rounds ? c->rounds : 12, stdout, &err))
			return fail(&err);
		return 0;
	}
	if (dit_generate(g, &err))
		return fail(&err);
	return 0;
}

/* The whole command line as given, recorded in the statistics (the parser reorders
 * argv's pointers). */
typedef struct cmd_line {
	int argc;
	char *const *argv;
} cmd_line;

static int cmd_generate(int argc, char **argv, int which, cmd_line line)
{
	const char *cmd = which == CMD_PLAN        ? "plan"
	                  : which == CMD_CALIBRATE ? "calibrate"
	                                           : "generate";
	dit_cli c;
	memset(&c, 0, sizeof c);
	dit_generate_opts_default(&c.gen);
	c.gen.rt.argc = line.argc;
	c.gen.rt.argv = line.argv;
	int rc = dit_cli_parse(&c, cmd, argc, argv);
	if (!rc)
		rc = generate_run(&c, cmd, which);
	dit_cli_free(&c);
	return rc;
}

static int forward_run(dit_cli *c)
{
	if (said_help(c, "forward"))
		return 0;
	if (c->gen.rt.sched && strcmp(c->gen.rt.sched, "help") == 0) {
		dit_runtime_sched_list(stdout);
		return 0;
	}
	int rc = dit_cli_check(c, "forward", DIT_CLI_FORWARD);
	if (rc)
		return rc;
	if (!c->gen.model_dir || !c->inputs || !c->gen.output)
		return dit_cli_usage("forward", "--model-dir, --inputs and --output are required%s",
		                     "");
	c->gen.rt.on_hang = on_hang;
	c->gen.rt.check_models = 1;
	stop_signals_set(&c->gen.rt, NULL, "nothing written", 0);
	dit_forward_opts f = {.model_dir = c->gen.model_dir,
	                      .inputs = c->inputs,
	                      .output = c->gen.output,
	                      .stats_json = c->gen.stats_json,
	                      .trace_dir = c->gen.trace_dir,
	                      .offload = c->gen.offload,
	                      .check_finite = c->gen.check_finite,
	                      .fam = c->gen.fam,
	                      .rt = c->gen.rt,
	                      .ck = c->gen.ck};
	dit_error err;
	dit_error_clear(&err);
	if (dit_forward(&f, &err))
		return fail(&err);
	return 0;
}

static int cmd_forward(int argc, char **argv, cmd_line line)
{
#ifdef DIT_SIMGRID
	(void)argc;
	(void)argv;
	(void)line;
	return dit_cli_usage("forward", "ditstar-sim simulates generate and plan only%s", "");
#endif
	dit_cli c;
	memset(&c, 0, sizeof c);
	dit_generate_opts_default(&c.gen);
	c.gen.rt.argc = line.argc;
	c.gen.rt.argv = line.argv;
	int rc = dit_cli_parse(&c, "forward", argc, argv);
	if (!rc)
		rc = forward_run(&c);
	dit_cli_free(&c);
	return rc;
}

static int info_run(dit_cli *c)
{
	if (said_help(c, "info"))
		return 0;
	int rc = dit_cli_check(c, "info", DIT_CLI_INFO);
	if (rc)
		return rc;
	if (c->list) {
		for (size_t i = 0; i < dit_preset_count(); i++) {
			const dit_preset *p = dit_preset_get(i);
			printf("%-18s %-16s %s\n", p->name, p->model, p->about);
		}
		return 0;
	}
	if (!!c->gen.model_dir == !!c->gen.model_name)
		return dit_cli_usage("info", "give one of --model-dir, --model or --list%s", "");
	dit_error err;
	dit_error_clear(&err);
	if (dit_cli_info(c->gen.model_dir, c->gen.model_name, &c->gen.ck, c->gen.frames,
	                 c->gen.height, c->gen.width, &err))
		return fail(&err);
	return 0;
}

static int cmd_info(int argc, char **argv)
{
	dit_cli c;
	memset(&c, 0, sizeof c);
	dit_generate_opts_default(&c.gen);
	c.gen.model_name = NULL;
	int rc = dit_cli_parse(&c, "info", argc, argv);
	if (!rc)
		rc = info_run(&c);
	dit_cli_free(&c);
	return rc;
}

/* `ditstar help [COMMAND | --man | --markdown | --list]` */
static int cmd_help(int argc, char **argv)
{
	if (has_flag(argc, argv, "--version")) {
		printf("ditstar %s\n", ditstar_version());
		return 0;
	}
	const dit_cli_command *c = argc != 2                        ? NULL
	                           : strcmp(argv[1], "--help") == 0 ? dit_cli_command_find("help")
	                                                            : dit_cli_command_find(argv[1]);
	if (argc == 1)
		dit_cli_help_main(stdout);
	else if (c)
		dit_cli_help_command(stdout, c);
	else if (argc == 2 && strcmp(argv[1], "--man") == 0)
		dit_cli_help_man(stdout);
	else if (argc == 2 && strcmp(argv[1], "--markdown") == 0)
		dit_cli_help_markdown(stdout);
	else if (argc == 2 && strcmp(argv[1], "--list") == 0)
		dit_cli_help_list(stdout);
	else if (argc == 2 && strcmp(argv[1], "--completion") == 0)
		dit_cli_help_completion(stdout);
	else
		return dit_cli_usage(
		    "help",
		    "give nothing, a command, --man, --markdown, --list or --completion, not "
		    "'%s'",
		    argv[1]);
	return 0;
}

/* --version or --help anywhere in a command without an option table: prints it, 1. */
static int said_help_argv(int argc, char **argv, const char *cmd)
{
	dit_cli c = {.version = has_flag(argc, argv, "--version"),
	             .help = has_flag(argc, argv, "--help") || has_flag(argc, argv, "-h")};
	return said_help(&c, cmd);
}

static int cmd_sched(int argc, char **argv)
{
	if (said_help_argv(argc, argv, "sched"))
		return 0;
	if (argc != 2 || strcmp(argv[1], "list") != 0)
		return dit_cli_usage("sched", "the only subcommand is 'list'%s", "");
	dit_runtime_sched_list(stdout);
	return 0;
}

static int cmd_trace(int argc, char **argv)
{
	if (said_help_argv(argc, argv, "trace"))
		return 0;
	int json = argc == 4 && strcmp(argv[3], "--json") == 0;
	if (argc < 3 || strcmp(argv[1], "summarize") != 0 || (argc == 4 && !json) || argc > 4)
		return dit_cli_usage("trace", "usage: ditstar trace summarize DIR [--json]%s", "");
	dit_error err = {0};
	if (dit_trace_summarize(argv[2], json, stdout, &err) != DIT_OK)
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
	if (argc < 2) { /* what the command does, where a mistyped line ran a generate */
		dit_cli_help_main(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	/* the line as given, before the parser reorders argv */
	char **copy = malloc((size_t)(argc + 1) * sizeof *copy);
	if (copy)
		memcpy(copy, argv, (size_t)(argc + 1) * sizeof *copy);
	cmd_line line = {copy ? argc : 0, copy};
	int rc = -1;
	if (strcmp(cmd, "generate") == 0)
		rc = cmd_generate(argc - 1, argv + 1, CMD_GENERATE, line);
	else if (strcmp(cmd, "plan") == 0)
		rc = cmd_generate(argc - 1, argv + 1, CMD_PLAN, line);
	else if (strcmp(cmd, "calibrate") == 0)
		rc = cmd_generate(argc - 1, argv + 1, CMD_CALIBRATE, line);
	else if (strcmp(cmd, "forward") == 0)
		rc = cmd_forward(argc - 1, argv + 1, line);
	free(copy);
	if (rc >= 0)
		return rc;
	if (strcmp(cmd, "info") == 0)
		return cmd_info(argc - 1, argv + 1);
	if (strcmp(cmd, "sched") == 0)
		return cmd_sched(argc - 1, argv + 1);
	if (strcmp(cmd, "trace") == 0)
		return cmd_trace(argc - 1, argv + 1);
	if (strcmp(cmd, "help") == 0)
		return cmd_help(argc - 1, argv + 1);
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		dit_cli_help_main(stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("ditstar %s\n", ditstar_version());
		return 0;
	}
	if (strcmp(cmd, "--paths") == 0) { /* where the tools and files around a run are */
		char *cache = dit_synth_cache_root();
		printf("cache          %s (preset checkpoints, chunk stores, step profiles, read "
		       "rates; --cache-dir, DITSTAR_CACHE)\n",
		       cache ? cache : "?");
		free(cache);
		dit_runtime_paths(stdout);
		return 0;
	}
	fprintf(stderr, "ditstar: unknown command '%s' (see 'ditstar --help')\n", cmd);
	return EXIT_USAGE;
}

/* Output to standard output is buffered: a write that failed (a full disk, /dev/full)
 * shows only here, and is an error like any other. */
int main(int argc, char **argv)
{
#ifdef DIT_SIMGRID
	xbt_log_control_set("root.thres:warning");
	const char *silent = getenv("STARPU_SILENT");
	if (&_starpu_silent && !(silent && strcmp(silent, "0") == 0))
		_starpu_silent = 1;
#endif
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

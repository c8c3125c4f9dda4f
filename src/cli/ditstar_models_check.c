/* ditstar-models-check: lets StarPU parse the performance models of ditstar's codelets
 * under the current STARPU_HOME (or STARPU_PERF_MODEL_DIR), so that a file StarPU would
 * abort on is found before a run starts StarPU. The library starts this program with
 * posix_spawn (dit_starpu_models_check): a fresh process, never a fork of a threaded
 * one, whose abort ends only itself.
 *
 * Report on standard output, one line per step: "D<folder>", then "F<file>" before
 * parsing a model file and "K" once it parsed, and "E" when every file parsed. The
 * parent learns from the last "F" without a "K" which file StarPU died on. Standard
 * error is StarPU's assertion text, which the parent discards. Exit 0 when done,
 * 3 when the report cannot be written, 4 when StarPU refused a file without aborting
 * or the file is not a regular one (never opened: a FIFO would block). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <starpu.h>

static void say(char kind, const char *text)
{
	char line[PATH_MAX + 4];
	int n = snprintf(line, sizeof line, "%c%s\n", kind, text ? text : "");
	if (n < 0 || (size_t)n >= sizeof line || write(1, line, (size_t)n) != n)
		exit(3);
}

/* Parses "dit_*<suffix>" in dir, each announced first. */
static int load_folder(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0; /* nothing calibrated yet */
	size_t sl = strlen(suffix);
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "dit_", 4) != 0 || l <= sl ||
		    strcmp(e->d_name + l - sl, suffix) != 0)
			continue;
		char file[2 * PATH_MAX];
		snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
		say('F', e->d_name);
		/* a FIFO or a device would block StarPU's fopen (or feed it without end) */
		struct stat sb;
		if (stat(file, &sb) != 0 || !S_ISREG(sb.st_mode)) {
			closedir(d);
			return 4;
		}
		struct starpu_perfmodel m;
		memset(&m, 0, sizeof m);
		if (starpu_perfmodel_load_file(file, &m) != 0) {
			closedir(d);
			return 4;
		}
		starpu_perfmodel_unload_model(&m);
		say('K', NULL);
	}
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("usage: %s\n(started by the ditstar library: parses the codelets' StarPU "
		       "performance models and reports on standard output)\n",
		       argv[0]);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "%s: takes no arguments\n", argv[0]);
		return 2;
	}
	starpu_perfmodel_initialize();
	/* the folder of the codelets' models, from the path StarPU gives a known symbol:
	 * "<dir>/dit_linear.<host>" */
	char path[PATH_MAX];
	starpu_perfmodel_get_model_path("dit_linear", path, sizeof path);
	char *slash = strrchr(path, '/');
	if (!slash || strncmp(slash + 1, "dit_linear", 10) != 0) {
		say('E', NULL);
		return 0;
	}
	char suffix[256];
	snprintf(suffix, sizeof suffix, "%s", slash + 1 + 10); /* ".<host>" */
	*slash = '\0';
	say('D', path);
	int rc = load_folder(path, suffix);
	if (rc == 0)
		say('E', NULL);
	return rc;
}

/* The ditstar command line's parser: getopt_long over the option table (dit_cli_opt.h),
 * each value stored as its entry says (dit_cli_value.c). See dit_cli_parse.h. */
#define _POSIX_C_SOURCE 200809L
#include "dit_cli_parse.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dit_cli_opt.h"
#include "dit_cli_value.h"

/* getopt_long's values: the table's index from here */
#define OPT_FIRST 256

int dit_cli_usage(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "ditstar %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see 'ditstar %s --help')\n", cmd);
	return EXIT_USAGE;
}

/* The table's length. */
static size_t table_length(void)
{
	size_t n;
	dit_cli_table(&n);
	return n;
}

/* getopt_long's array for the table, NULL-terminated; NULL when out of memory. */
static struct option *long_options(void)
{
	struct option *lo = calloc(table_length() + 1, sizeof *lo);
	for (size_t i = 0; lo && i < table_length(); i++) {
		lo[i].name = dit_cli_table(NULL)[i].name;
		lo[i].has_arg = dit_cli_opt_takes_value(&dit_cli_table(NULL)[i]) ? required_argument
		                                                                 : no_argument;
		lo[i].val = OPT_FIRST + (int)i;
	}
	return lo;
}

/* The message for getopt_long's '?' at arg: a value given to an option that takes none
 * ("--quiet=1"), else an unknown option. */
static int unknown(const char *cmd, const char *arg)
{
	const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
	if (eq) {
		size_t n = (size_t)(eq - arg - 2);
		size_t nopts;
		const dit_cli_opt *opts = dit_cli_table(&nopts);
		for (size_t i = 0; i < nopts; i++) {
			const dit_cli_opt *o = &opts[i];
			if (!dit_cli_opt_takes_value(o) && strlen(o->name) == n &&
			    strncmp(o->name, arg + 2, n) == 0)
				return dit_cli_usage(cmd, "--%s takes no value", o->name);
		}
	}
	return dit_cli_usage(cmd, "unknown option: %s", arg);
}

/* The options of argv, each stored: 0, or EXIT_USAGE printed. */
static int parse_options(dit_cli *c, const char *cmd, int argc, char **argv,
                         const struct option *lo)
{
	char msg[512];
	optind = 1;
	opterr = 0;
	for (;;) {
		int idx = optind;
		/* ":" first: a missing value is ':', an unknown option '?' */
		int opt = getopt_long(argc, argv, ":", lo, NULL);
		if (opt == -1)
			break;
		const char *arg = argv[idx < argc ? idx : argc - 1];
		if (opt == ':')
			return dit_cli_usage(cmd, "%s needs a value", arg);
		if (opt < OPT_FIRST || opt >= OPT_FIRST + (int)table_length())
			return unknown(cmd, arg);
		size_t i = (size_t)(opt - OPT_FIRST);
		if (c->given[i] < 255)
			c->given[i]++;
		if (dit_cli_value_set(c, &dit_cli_table(NULL)[i], optarg, msg, sizeof msg))
			return dit_cli_usage(cmd, "%s", msg);
	}
	if (optind < argc)
		return dit_cli_usage(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int dit_cli_parse(dit_cli *c, const char *cmd, int argc, char **argv)
{
	free(c->given);
	c->given = calloc(table_length(), 1);
	struct option *lo = long_options();
	if (!c->given || !lo) {
		free(lo);
		fprintf(stderr, "ditstar %s: out of memory\n", cmd);
		return EXIT_FAILURE;
	}
	int rc = parse_options(c, cmd, argc, argv, lo);
	free(lo);
	return rc;
}

int dit_cli_given(const dit_cli *c, const char *name)
{
	for (size_t i = 0; c->given && i < table_length(); i++)
		if (c->given[i] &&
		    strcmp(dit_cli_opt_main(&dit_cli_table(NULL)[i])->name, name) == 0)
			return 1;
	return 0;
}

int dit_cli_check(const dit_cli *c, const char *cmd, unsigned cmd_bit)
{
	for (size_t i = 0; c->given && i < table_length(); i++)
		if (c->given[i] && !(dit_cli_opt_main(&dit_cli_table(NULL)[i])->cmds & cmd_bit))
			return dit_cli_usage(cmd, "option --%s does not apply here",
			                     dit_cli_table(NULL)[i].name);
	return 0;
}

void dit_cli_free(dit_cli *c)
{
	free(c->given);
	c->given = NULL;
}

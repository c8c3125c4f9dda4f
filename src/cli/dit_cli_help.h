/* The ditstar command's help in its three forms, all made from the commands below and
 * the option table (dit_cli_opt.h): --help texts (src/cli/dit_cli_help.c), the man page
 * (dit_cli_man.c) and docs/usage.md's options tables (dit_cli_md.c). */
#ifndef DIT_CLI_HELP_H
#define DIT_CLI_HELP_H

#include <stdio.h>

typedef struct dit_cli_command {
	const char *name;    /* "generate", "sched" */
	unsigned bit;        /* DIT_CLI_*: the command of the option table; 0: none of its
	                        options */
	const char *line;    /* how the overview lists it: "sched list" */
	const char *summary; /* the overview's line about it */
	const char *args;    /* what follows "ditstar NAME" in its usage: "[options]" */
	const char *about;   /* what it does, one paragraph (markup as the option table's) */
} dit_cli_command;

extern const dit_cli_command dit_cli_commands[];
extern const size_t dit_cli_ncommands;

/* The command named name, or NULL. */
const dit_cli_command *dit_cli_command_find(const char *name);

/* `ditstar --help`: the commands. */
void dit_cli_help_main(FILE *out);
/* `ditstar CMD --help`: its usage, what it does and its options by group. */
void dit_cli_help_command(FILE *out, const dit_cli_command *c);
/* `ditstar help --man`: ditstar(1) in troff. */
void dit_cli_help_man(FILE *out);
/* `ditstar help --markdown`: docs/usage.md's options section, between its markers. */
void dit_cli_help_markdown(FILE *out);
/* `ditstar help --list`: each entry of the option table, one a line: name, "value" or
 * "flag", its commands (comma-separated), the option an alias spells (or "-"). */
void dit_cli_help_list(FILE *out);
/* `ditstar help --completion`: a bash completion script for ditstar and ditstar-sim
 * (src/cli/dit_cli_complete.c). */
void dit_cli_help_completion(FILE *out);

#endif

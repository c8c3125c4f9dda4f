/* The ditstar command line's parser (src/cli/dit_cli_parse.c): it walks the option table
 * (dit_cli_opt.h) to parse a command's arguments into a dit_cli, and tells which options
 * were given and whether the command takes them. */
#ifndef DIT_CLI_PARSE_H
#define DIT_CLI_PARSE_H

#include <stddef.h>

#include "dit_cli.h"

/* Parses argv (after the command name) into *c, whose defaults the caller set; 0, or
 * EXIT_USAGE with the message printed. cmd names the command in messages. */
int dit_cli_parse(dit_cli *c, const char *cmd, int argc, char **argv);

/* Whether the option named name (a long name, without "--") or one of its aliases was
 * given. */
int dit_cli_given(const dit_cli *c, const char *name);

/* EXIT_USAGE with a message naming the first option given that the command (its
 * DIT_CLI_* bit) does not take; 0 when it takes every option given. */
int dit_cli_check(const dit_cli *c, const char *cmd, unsigned cmd_bit);

void dit_cli_free(dit_cli *c);

/* Prints "ditstar CMD: " fmt (with arg) and the help hint; returns EXIT_USAGE. */
int dit_cli_usage(const char *cmd, const char *fmt, const char *arg);

#endif

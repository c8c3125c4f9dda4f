/* The ditstar command's options as data (the table is src/cli/dit_cli_options.c): each
 * option's names, value, commands, families and help. The parser (dit_cli_parse.c), the
 * --help texts (dit_cli_help.c), the man page (dit_cli_man.c) and the options tables of
 * docs/usage.md (dit_cli_md.c) are all made from it. */
#ifndef DIT_CLI_OPT_H
#define DIT_CLI_OPT_H

#include <stddef.h>
#include <stdint.h>

#include "dit_cli.h"
#include "dit_family_opts.h"

/* How a value is parsed and stored at the option's offset in dit_cli. */
typedef enum dit_cli_kind {
	DIT_CLI_SAME = 0, /* an alias: as the entry it spells */
	DIT_CLI_FLAG,     /* int, set to 1; the option takes no value */
	DIT_CLI_STRING,   /* const char *, the value itself */
	DIT_CLI_INT,      /* int in [min, max] */
	DIT_CLI_INT64,    /* int64_t (or uint64_t) in [min, max] */
	DIT_CLI_DOUBLE,   /* double in [lo, hi], lo excluded when lo_open */
	DIT_CLI_SIZE,     /* size_t bytes: N with K, M, G or T (powers of 1024; bare: MiB) */
	DIT_CLI_CHOICE,   /* const char *, the value, one of names */
	DIT_CLI_ENUM,     /* int, values[i] for names[i] */
	DIT_CLI_SPECIAL,  /* parse() */
} dit_cli_kind;

typedef struct dit_cli_opt dit_cli_opt;

/* Parses arg for option o into *c: 0, or -1 with the whole message in msg. */
typedef int (*dit_cli_parse_fn)(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg,
                                size_t len);

/* Text (help, more, a family's notes) may hold `code` and [links](page.md#anchor): the
 * docs keep both, --help and the man page show the code plain and the link's text. */
struct dit_cli_opt {
	const char *name;     /* the long name, without "--" */
	const char *alias_of; /* an alias: the name of the option it spells, whose commands,
	                         families and help it shares; NULL for an option */
	const char *arg;      /* the value's name in help ("N"); NULL: the names joined by
	                         '|' (CHOICE, ENUM), else none (FLAG) */
	unsigned cmds;        /* DIT_CLI_*: the commands that take it */
	/* the family whose own option it is (its descriptor declares it: the value goes to
	 * the run's family options, dit_family_opts.h); NULL: every family's */
	const dit_family_doc *family;
	dit_cli_kind kind;
	size_t off;               /* where the value goes: offsetof(dit_cli, ...) */
	int64_t min, max;         /* INT, INT64 */
	double lo, hi;            /* DOUBLE */
	int lo_open;              /* DOUBLE: lo itself refused */
	const char *const *names; /* CHOICE, ENUM: NULL-terminated */
	const int *values;        /* ENUM: the value of each name */
	dit_cli_parse_fn parse;   /* SPECIAL */
	const char *want;         /* the refusal after the name ("needs a count"); NULL: from
	                             the kind and range */
	const char *help;         /* what it does, for --help, the man page and the docs */
	const char *more;         /* what the man page and the docs add; NULL: nothing */
};

/* The whole table: the common options (src/cli/dit_cli_options.c), then each family's
 * own as its descriptor declares them (those of a name an earlier entry has left out),
 * made once; *n its length. */
const dit_cli_opt *dit_cli_table(size_t *n);

/* The entry named name (without "--"), option or alias; NULL if none. */
const dit_cli_opt *dit_cli_opt_find(const char *name);
/* The option an alias spells; o itself for an option. */
const dit_cli_opt *dit_cli_opt_main(const dit_cli_opt *o);
/* The entry that parses o's value: o, or for an alias of kind DIT_CLI_SAME its option. */
const dit_cli_opt *dit_cli_opt_parser(const dit_cli_opt *o);
/* Whether o takes a value. */
int dit_cli_opt_takes_value(const dit_cli_opt *o);
/* The value's name in help ("N", "none|cpu|disk|auto"); "" for a flag. */
const char *dit_cli_opt_arg(const dit_cli_opt *o, char *buf, size_t len);

#endif

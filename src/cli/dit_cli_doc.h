/* What the --help texts, the man page and the docs' tables share (src/cli/dit_cli_doc.c):
 * the option table's text rendered for each, its groups, and word wrapping. */
#ifndef DIT_CLI_DOC_H
#define DIT_CLI_DOC_H

#include <stdio.h>

#include "dit_cli_opt.h"

typedef enum dit_doc_mode {
	DIT_DOC_TEXT, /* --help: code plain, a link's text */
	DIT_DOC_MAN,  /* troff: code bold, a link's text, escapes */
	DIT_DOC_MD,   /* markdown table cells: as written, '|' escaped */
} dit_doc_mode;

/* s, whose markup is `code` and [text](target), rendered for mode into buf. */
void dit_cli_doc_render(char *buf, size_t len, const char *s, dit_doc_mode mode);

/* The groups of options: NULL, the options of every family; then each family's own.
 * Whether option o (not an alias) is in fam's group, and whether any option of cmds
 * (DIT_CLI_* bits) is. */
int dit_cli_doc_group_has(const dit_cli_opt *o, const dit_family_doc *fam);
int dit_cli_doc_group_used(const dit_family_doc *fam, unsigned cmds);

/* "--name ARG" (markup-free) */
void dit_cli_doc_spec(const dit_cli_opt *o, char *buf, size_t len);

/* Option o's text with its markup: its help, with more when full; its aliases last
 * ("also --offload-chunk-size N[,M]"). */

void dit_cli_doc_text(const dit_cli_opt *o, int full, char *buf, size_t len);

/* The commands of bits cmds, "generate, plan, calibrate". */
void dit_cli_doc_cmds(unsigned cmds, char *buf, size_t len);

/* Prints text word-wrapped to width columns: its first word where the line is now, at
 * column col, the next lines indented by indent; ends with a newline. */
void dit_cli_doc_wrap(FILE *out, const char *text, int col, int indent, int width);

#endif

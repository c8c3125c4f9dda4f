/* bash completion for ditstar, made from the commands and the option table: `ditstar
 * help --completion` (see dit_cli_help.h); installed as share/bash-completion/
 * completions/ditstar. Completes commands, each command's options, the values of
 * choice options and presets, files for FILE and folders for DIR values. */
#include "dit_cli_help.h"

#include <string.h>

#include "dit_cli_opt.h"
#include "dit_model_desc.h"

/* The options of command bit as one space-separated word list. */
static void command_words(FILE *out, unsigned bit)
{
	size_t n;
	const dit_cli_opt *t = dit_cli_table(&n);
	for (size_t i = 0; i < n; i++)
		if (dit_cli_opt_main(&t[i])->cmds & bit)
			fprintf(out, " --%s", t[i].name);
}

/* The case arm completing option o's value, when it has one to offer. */
static void value_arm(FILE *out, const dit_cli_opt *o)
{
	const dit_cli_opt *p = dit_cli_opt_parser(o);
	char buf[256];
	const char *arg = dit_cli_opt_arg(o, buf, sizeof buf);
	if (strcmp(o->name, "sched") == 0) { /* the policies this StarPU has */
		fprintf(out, "\t--sched) words=\"$(\"${COMP_WORDS[0]}\" sched list 2>/dev/null | "
		             "awk '{print $1}')\" ;;\n");
	} else if (strcmp(o->name, "model") == 0) {
		fprintf(out, "\t--model) words='");
		for (size_t i = 0; i < dit_preset_count(); i++)
			fprintf(out, "%s%s", i ? " " : "", dit_preset_get(i)->name);
		fprintf(out, "' ;;\n");
	} else if (p->kind == DIT_CLI_CHOICE || p->kind == DIT_CLI_ENUM) {
		fprintf(out, "\t--%s) words='", o->name);
		for (const char *const *s = p->names; s && *s; s++)
			fprintf(out, "%s%s", s == p->names ? "" : " ", *s);
		fprintf(out, "' ;;\n");
	} else if (strchr(arg, '|')) { /* the names its value takes, as --help shows them */
		fprintf(out, "\t--%s) words='", o->name);
		for (const char *c = arg; *c; c++)
			fputc(*c == '|' ? ' ' : *c, out);
		fprintf(out, "' ;;\n");
	} else if (strstr(arg, "DIR") && strcmp(o->name, "model-dir") != 0) {
		fprintf(out, "\t--%s) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n", o->name);
	} else if (strstr(arg, "FILE") || strstr(arg, "DIR")) { /* --model-dir: either */
		fprintf(out, "\t--%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", o->name);
	} else if (dit_cli_opt_takes_value(o)) {
		fprintf(out, "\t--%s) return ;;\n", o->name); /* a number or a name: nothing */
	}
}

void dit_cli_help_completion(FILE *out)
{
	fprintf(out, "# bash completion for ditstar and ditstar-sim, made by `ditstar help "
	             "--completion`\n"
	             "_ditstar() {\n"
	             "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	             "\tlocal cmd=${COMP_WORDS[1]} words=\n"
	             "\tCOMPREPLY=()\n"
	             "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
	             "\t\tCOMPREPLY=($(compgen -W '");
	for (size_t i = 0; i < dit_cli_ncommands; i++)
		fprintf(out, "%s ", dit_cli_commands[i].name);
	fprintf(out, "--help --version' -- \"$cur\"))\n\t\treturn\n\tfi\n\tcase $prev in\n");
	size_t n;
	const dit_cli_opt *t = dit_cli_table(&n);
	for (size_t i = 0; i < n; i++)
		value_arm(out, &t[i]);
	fprintf(out, "\tesac\n"
	             "\tif [ -z \"$words\" ]; then\n"
	             "\t\tcase $cmd in\n");
	for (size_t i = 0; i < dit_cli_ncommands; i++) {
		const dit_cli_command *c = &dit_cli_commands[i];
		fprintf(out, "\t\t%s) words='", c->name);
		if (c->bit)
			command_words(out, c->bit);
		else if (strcmp(c->name, "sched") == 0)
			fprintf(out, "list --help --version");
		else if (strcmp(c->name, "trace") == 0)
			fprintf(out, "summarize --json --help --version");
		else if (strcmp(c->name, "help") == 0)
			fprintf(out, "--man --markdown --list --completion");
		fprintf(out, "' ;;\n");
	}
	fprintf(out, "\t\tesac\n"
	             "\tfi\n"
	             "\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
	             "\t[ \"$cmd\" = trace ] && [ \"$COMP_CWORD\" -ge 3 ] && case $cur in -*) ;; "
	             "*) COMPREPLY+=($(compgen -d -- \"$cur\")) ;; esac\n"
	             "}\n"
	             "complete -F _ditstar ditstar ditstar-sim\n");
}

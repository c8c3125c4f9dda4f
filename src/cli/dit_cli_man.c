/* ditstar(1), from the commands (dit_cli_help.c) and the option table: `ditstar help
 * --man` (see dit_cli_help.h). docs/ditstar.1 is its output; tests/test_option_table.sh
 * checks that it is not stale. */
#include "dit_cli_help.h"

#include <string.h>

#include "dit_cli_doc.h"
#include "dit_cli_opt.h"

#define ALL_CMDS                                                                                   \
	(DIT_CLI_GENERATE | DIT_CLI_PLAN | DIT_CLI_CALIBRATE | DIT_CLI_FORWARD | DIT_CLI_INFO)

/* A paragraph of text: rendered, and kept from starting a control line. */
static void para(FILE *out, const char *text)
{
	char r[8192];
	dit_cli_doc_render(r, sizeof r, text, DIT_DOC_MAN);
	fprintf(out, "%s%s\n", r[0] == '.' || r[0] == '\'' ? "\\&" : "", r);
}

/* .TP with "--name ARG" (bold name, italic value), then text. */
static void item(FILE *out, const dit_cli_opt *o, const char *text)
{
	char a[128], name[128], arg[160];
	snprintf(a, sizeof a, "`--%s`", o->name);
	dit_cli_doc_render(name, sizeof name, a, DIT_DOC_MAN);
	dit_cli_doc_render(arg, sizeof arg, dit_cli_opt_arg(o, a, sizeof a), DIT_DOC_MAN);
	fprintf(out, ".TP\n%s%s%s%s\n", name, *arg ? " \\fI" : "", arg, *arg ? "\\fR" : "");
	para(out, text);
}

static void options(FILE *out, const dit_family_doc *fam)
{
	char text[8192], cmds[128];
	size_t nopts;
	const dit_cli_opt *opts = dit_cli_table(&nopts);
	for (size_t i = 0; i < nopts; i++) {
		const dit_cli_opt *o = &opts[i];
		if (!dit_cli_doc_group_has(o, fam))
			continue;
		dit_cli_doc_text(o, 1, text, sizeof text);
		dit_cli_doc_cmds(o->cmds, cmds, sizeof cmds);
		size_t k = strlen(text);
		snprintf(text + k, sizeof text - k, ". Commands: %s.", cmds);
		item(out, o, text);
	}
	for (const dit_family_note *n = fam ? fam->notes : NULL; n && n->opt; n++)
		if (dit_cli_opt_find(n->opt))
			item(out, dit_cli_opt_find(n->opt), n->text);
}

static void commands(FILE *out)
{
	char u[512];
	for (size_t i = 0; i < dit_cli_ncommands; i++) {
		const dit_cli_command *c = &dit_cli_commands[i];
		snprintf(u, sizeof u, "`ditstar %s %s`", c->name, c->args);
		fputs(".TP\n", out);
		para(out, u);
		para(out, c->about);
	}
}

void dit_cli_help_man(FILE *out)
{
	fputs(".\\\" made by `ditstar help --man` from the option table, "
	      "src/cli/dit_cli_options.c\n"
	      ".TH DITSTAR 1 \"\" \"ditstar\" \"User Commands\"\n"
	      ".SH NAME\nditstar \\- video diffusion transformers on StarPU\n"
	      ".SH SYNOPSIS\n.B ditstar\n.I COMMAND\n.RI [ options ]\n"
	      ".SH DESCRIPTION\n"
	      "ditstar runs the video diffusion transformers of Wan2.1, Wan2.2, HunyuanVideo, "
	      "LTX-2 and Cosmos-Predict2.5 on StarPU: the sampling loop to latents, one "
	      "forward, the plan of where the weights live and StarPU's performance models for "
	      "it.\n.SH COMMANDS\n",
	      out);
	commands(out);
	fputs(".SH OPTIONS\nEach option ends with the commands that take it; the options of "
	      "one family (or of some) say so.\n",
	      out);
	options(out, NULL);
	for (size_t f = 0; f < dit_family_doc_count(); f++) {
		const dit_family_doc *fa = dit_family_doc_get(f);
		if (!dit_cli_doc_group_used(fa, ALL_CMDS))
			continue;
		fprintf(out, ".SS \"%s options\"\n", fa->name);
		para(out, fa->about);
		options(out, fa);
	}
	fputs(".SH EXIT STATUS\n0 on success; 2 for a usage error (every error of the command "
	      "line, sizes the model refuses, outputs that cannot be written); 3 for a run the "
	      "watchdog found hung; 130 for a run stopped by SIGINT or SIGTERM; 1 for anything "
	      "else.\n"
	      ".SH SEE ALSO\nThe documentation in the source tree's docs/ folder, usage.md "
	      "first.\n",
	      out);
}

/* docs/usage.md's options tables, from the option table: `ditstar help --markdown`
 * (see dit_cli_help.h). tests/test_option_table.sh checks that docs/usage.md holds
 * exactly this between its markers. */
#include "dit_cli_help.h"

#include <ctype.h>
#include <string.h>

#include "dit_cli_doc.h"
#include "dit_cli_opt.h"

#define ALL_CMDS                                                                                   \
	(DIT_CLI_GENERATE | DIT_CLI_PLAN | DIT_CLI_CALIBRATE | DIT_CLI_FORWARD | DIT_CLI_INFO)

/* One row: `--spec` | commands | text. */
static void row(FILE *out, const dit_cli_opt *o, const char *text)
{
	char spec[160], cmds[128], r[8192];
	dit_cli_doc_spec(o, spec, sizeof spec);
	dit_cli_doc_cmds(o->cmds, cmds, sizeof cmds);
	dit_cli_doc_render(r, sizeof r, text, DIT_DOC_MD);
	fprintf(out, "| `");
	for (const char *p = spec; *p; p++)
		fputs(*p == '|' ? "\\|" : (char[]){*p, 0}, out);
	fprintf(out, "` | %s | %s |\n", cmds, r);
}

static void table(FILE *out, const dit_family_doc *fam)
{
	char text[8192];
	fputs("| option | commands | meaning |\n| --- | --- | --- |\n", out);
	size_t nopts;
	const dit_cli_opt *opts = dit_cli_table(&nopts);
	for (size_t i = 0; i < nopts; i++) {
		const dit_cli_opt *o = &opts[i];
		if (!dit_cli_doc_group_has(o, fam))
			continue;
		dit_cli_doc_text(o, 1, text, sizeof text);
		row(out, o, text);
	}
	for (const dit_family_note *n = fam ? fam->notes : NULL; n && n->opt; n++)
		if (dit_cli_opt_find(n->opt))
			row(out, dit_cli_opt_find(n->opt), n->text);
}

void dit_cli_help_markdown(FILE *out)
{
	char r[1024];
	fputs("<!-- options: begin -->\n<!-- made by `ditstar help --markdown` from the option "
	      "table, src/cli/dit_cli_options.c: change the table, then run `make update-docs` "
	      "-->\n\n### Options of every family\n\n",
	      out);
	table(out, NULL);
	for (size_t f = 0; f < dit_family_doc_count(); f++) {
		const dit_family_doc *fa = dit_family_doc_get(f);
		if (!dit_cli_doc_group_used(fa, ALL_CMDS))
			continue;
		dit_cli_doc_render(r, sizeof r, fa->about, DIT_DOC_MD);
		r[0] = (char)toupper((unsigned char)r[0]);
		fprintf(out, "\n### %s options\n\n%s.\n\n", fa->name, r);
		table(out, fa);
	}
	fputs("<!-- options: end -->\n", out);
}

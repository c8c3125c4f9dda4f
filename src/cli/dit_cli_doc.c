/* What the --help texts, the man page and the docs' tables share: see dit_cli_doc.h. */
#include "dit_cli_doc.h"

#include <string.h>

/* Appends n bytes of s to buf (length *k, capacity len), truncating. */
static void put(char *buf, size_t len, size_t *k, const char *s, size_t n)
{
	while (n-- && *k + 1 < len)
		buf[(*k)++] = *s++;
	buf[*k] = '\0';
}

/* One character of text for mode: troff's and markdown's escapes. */
static void put_char(char *buf, size_t len, size_t *k, char ch, int code, dit_doc_mode mode)
{
	if (mode == DIT_DOC_MAN && ch == '\\')
		put(buf, len, k, "\\e", 2);
	else if (mode == DIT_DOC_MAN && ch == '-' && code)
		put(buf, len, k, "\\-", 2);
	else if (mode == DIT_DOC_MD && ch == '|')
		put(buf, len, k, "\\|", 2);
	else
		put(buf, len, k, &ch, 1);
}

void dit_cli_doc_render(char *buf, size_t len, const char *s, dit_doc_mode mode)
{
	size_t k = 0;
	int code = 0;
	buf[0] = '\0';
	for (const char *p = s; *p; p++) {
		/* a link: '[', its text without brackets, "](", a target, ')' */
		const char *close = *p == '[' ? p + 1 + strcspn(p + 1, "[]") : NULL;
		if (close && !(close[0] == ']' && close[1] == '('))
			close = NULL;
		if (*p == '`') {
			code = !code;
			if (mode == DIT_DOC_MD)
				put(buf, len, &k, "`", 1);
			else if (mode == DIT_DOC_MAN)
				put(buf, len, &k, code ? "\\fB" : "\\fR", 3);
		} else if (close && mode != DIT_DOC_MD && !code && strchr(close, ')')) {
			/* [text](target): the text alone (its own markup rendered) */
			char inner[256];
			size_t n = (size_t)(close - p - 1);
			snprintf(inner, sizeof inner, "%.*s", (int)n, p + 1);
			char r[512];
			dit_cli_doc_render(r, sizeof r, inner, mode);
			put(buf, len, &k, r, strlen(r));
			p = strchr(close, ')');
		} else {
			put_char(buf, len, &k, *p, code, mode);
		}
	}
}

int dit_cli_doc_group_has(const dit_cli_opt *o, const dit_family_doc *fam)
{
	return !o->alias_of && o->family == fam;
}

int dit_cli_doc_group_used(const dit_family_doc *fam, unsigned cmds)
{
	size_t nopts;
	const dit_cli_opt *opts = dit_cli_table(&nopts);
	for (size_t i = 0; i < nopts; i++)
		if (dit_cli_doc_group_has(&opts[i], fam) && (opts[i].cmds & cmds))
			return 1;
	return 0;
}

void dit_cli_doc_spec(const dit_cli_opt *o, char *buf, size_t len)
{
	char a[128];
	const char *arg = dit_cli_opt_arg(o, a, sizeof a);
	snprintf(buf, len, "--%s%s%s", o->name, *arg ? " " : "", arg);
}

void dit_cli_doc_text(const dit_cli_opt *o, int full, char *buf, size_t len)
{
	size_t k = 0;
	char tmp[256];
	buf[0] = '\0';
	put(buf, len, &k, o->help, strlen(o->help));
	if (full && o->more) {
		const char *sep = o->more[0] == '(' ? " " : ". ";
		put(buf, len, &k, sep, strlen(sep));
		put(buf, len, &k, o->more, strlen(o->more));
	}
	int n = 0;
	size_t nopts;
	const dit_cli_opt *opts = dit_cli_table(&nopts);
	for (size_t i = 0; i < nopts; i++) {
		const dit_cli_opt *a = &opts[i];
		if (!a->alias_of || dit_cli_opt_main(a) != o)
			continue;
		const char *sep = n++ ? ", `" : " (also `";
		dit_cli_doc_spec(a, tmp, sizeof tmp);
		put(buf, len, &k, sep, strlen(sep));
		put(buf, len, &k, tmp, strlen(tmp));
		put(buf, len, &k, "`", 1);
	}
	if (n)
		put(buf, len, &k, ")", 1);
}

void dit_cli_doc_cmds(unsigned cmds, char *buf, size_t len)
{
	static const char *const names[] = {"generate", "plan", "calibrate", "forward", "info"};
	size_t k = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (!(cmds & (1u << i)))
			continue;
		if (k)
			put(buf, len, &k, ", ", 2);
		put(buf, len, &k, names[i], strlen(names[i]));
	}
}

void dit_cli_doc_wrap(FILE *out, const char *text, int col, int indent, int width)
{
	int first = 1;
	for (const char *p = text; *p;) {
		size_t w = strcspn(p, " ");
		if (!first && col + 1 + (int)w > width) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, w, out);
		col += (int)w;
		first = 0;
		for (p += w; *p == ' ';)
			p++;
	}
	fputc('\n', out);
}

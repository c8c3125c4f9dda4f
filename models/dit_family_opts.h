/* A family's own run options as data its descriptor declares (dit_model_desc.doc):
 * name, value, range, help. Their values live in slots of dit_family_values (the run
 * options' `fam`), which the family's own code reads by the slot names its header
 * gives (models/dit_ltx.h: DIT_LTX_OPT_*). The command's parser, --help, man page and
 * docs tables take these entries as they take the common options; a program sets them
 * by name with dit_family_opt_set. */
#ifndef DIT_FAMILY_OPTS_H
#define DIT_FAMILY_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "dit_error.h"

#define DIT_FAMILY_NUMS 8 /* number slots */
#define DIT_FAMILY_STRS 4 /* string slots */

struct dit_family_doc;

#define DIT_FAMILY_GIVEN 16 /* options a run may give */

/* A run's family options: as given (name and value, before the model and so its family
 * is known), then resolved against the model's family into its slots. A number not
 * given is NaN (dit_family_num gives the caller's default then), a string NULL. */
typedef struct dit_family_values {
	struct {
		const char *name, *value;
	} given[DIT_FAMILY_GIVEN];
	int ngiven;
	const struct dit_family_doc *doc; /* the family resolved for (NULL: none yet) */
	double num[DIT_FAMILY_NUMS];
	const char *str[DIT_FAMILY_STRS];
} dit_family_values;

typedef enum dit_fopt_kind {
	DIT_FOPT_DOUBLE, /* num[slot] in [lo, hi], lo excluded when lo_open */
	DIT_FOPT_INT,    /* num[slot], an integer in [lo, hi] */
	DIT_FOPT_STRING, /* str[slot], the value itself */
	DIT_FOPT_CHOICE, /* str[slot], one of names */
} dit_fopt_kind;

/* The runs an option applies to. */
enum {
	DIT_FOPT_SAMPLING = 1, /* generate (and plan, calibrate) */
	DIT_FOPT_FORWARD = 2,  /* forward */
};

typedef struct dit_family_opt {
	const char *name; /* without "--"; NULL ends a table */
	const char *arg;  /* the value's name in help ("G"); NULL: CHOICE's names */
	unsigned runs;    /* DIT_FOPT_SAMPLING, DIT_FOPT_FORWARD */
	dit_fopt_kind kind;
	int slot;
	double lo, hi;
	int lo_open;
	const char *const *names; /* CHOICE: NULL-terminated */
	const char *want;         /* the refusal after the name; NULL: from the kind */
	const char *help;         /* what it does (may hold `code` and [links](page.md)) */
	const char *more;         /* what the man page and the docs add; NULL: nothing */
} dit_family_opt;

/* What an option every family takes means for this one. */
typedef struct dit_family_note {
	const char *opt; /* the option's name; NULL ends them */
	const char *text;
} dit_family_note;

/* A family as its users see it: its name, what sets it apart, its own options and
 * its notes on the common ones. The descriptors of one family share one. */
typedef struct dit_family_doc {
	const char *name;  /* "LTX-2" */
	const char *about; /* what sets its options apart ("" none) */
	const dit_family_opt *opts;
	const dit_family_note *notes;
} dit_family_doc;

/* Every family's doc, in the registry's order, each once (models/registry.c). */
size_t dit_family_doc_count(void);
const dit_family_doc *dit_family_doc_get(size_t i);

/* The option named name (without "--") of any family, and its family; NULL: none. */
const dit_family_opt *dit_family_opt_find(const char *name, const dit_family_doc **doc);

/* Nothing given, every slot unset. */
void dit_family_values_init(dit_family_values *v);

/* Gives option name (without "--") the value (borrowed; given again: the last one
 * counts). DIT_EUSAGE when no family has the option; the value is checked when the
 * run resolves it against its model's family. */
dit_status dit_family_opt_set(dit_family_values *v, const char *name, const char *value,
                              dit_error *err);

/* The values given, parsed into doc's slots (doc: the model's family; model its name
 * for messages; runs DIT_FOPT_SAMPLING or DIT_FOPT_FORWARD). DIT_EUSAGE naming the
 * option when it is not an option of this family or of this run, or its value is not
 * one it takes. */
dit_status dit_family_values_resolve(dit_family_values *v, const dit_family_doc *doc, unsigned runs,
                                     const char *model, dit_error *err);

/* What option o's value has to be ("needs a number from 0 to 1", "is karras or
 * linear"), for messages and help. */
void dit_family_opt_want(const dit_family_opt *o, char *buf, size_t len);

/* Family doc's option in num[slot], or dflt when it was not given or the values are
 * not doc's (resolved for another family, or not yet). */
double dit_family_num(const dit_family_values *v, const dit_family_doc *doc, int slot, double dflt);
/* The same for str[slot] (NULL: not given). */
const char *dit_family_str(const dit_family_values *v, const dit_family_doc *doc, int slot);

#endif

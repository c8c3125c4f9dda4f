/* What one ditstar command's arguments say (dit_cli), filled by the parser
 * (dit_cli_parse.h) as the option table (dit_cli_opt.h) directs. */
#ifndef DIT_CLI_H
#define DIT_CLI_H

#include "dit_run.h"

#define EXIT_USAGE 2

/* The commands that take options: an option's entry in the table names them. */
enum {
	DIT_CLI_GENERATE = 1 << 0,
	DIT_CLI_PLAN = 1 << 1,
	DIT_CLI_CALIBRATE = 1 << 2,
	DIT_CLI_FORWARD = 1 << 3,
	DIT_CLI_INFO = 1 << 4,
};

/* The run's options, and the command's own. */
typedef struct dit_cli {
	dit_generate_opts gen;
	const char *inputs; /* forward */
	/* where a family option's value is checked before the run's family options get it
	 * (dit_family_opt_set) */
	union {
		double num;
		int64_t i64;
		const char *str;
	} scratch;
	int list; /* info */
	int help;
	int version;                        /* --version: the version, nothing else */
	int rounds;                         /* calibrate: 0, the default */
	char pool_names[DIT_MAX_POOLS][48]; /* the POOL of each --chunk POOL=N */
	/* the FILE and EXPERT of each --lora [EXPERT=]FILE[:STRENGTH] */
	char lora_paths[DIT_MAX_LORAS][4096];
	char lora_experts[DIT_MAX_LORAS][16];
	/* [the table's length, dit_cli_table]: how many times each entry of the table was given (at
	 * most 255), allocated by dit_cli_parse, freed by dit_cli_free */
	unsigned char *given;
} dit_cli;

#endif

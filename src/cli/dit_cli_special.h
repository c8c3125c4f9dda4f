/* The option values the table's plain kinds do not parse (src/cli/dit_cli_special.c),
 * each named by its entry in the table (dit_cli_options.c). */
#ifndef DIT_CLI_SPECIAL_H
#define DIT_CLI_SPECIAL_H

#include "dit_cli_opt.h"

/* --chunk: N or N,M,... (one size per pool in order, the last repeating) or POOL=N */
int dit_cli_chunk_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);
/* --offload-chunk-size-double N, --offload-chunk-size-single N: POOL is the name's end */
int dit_cli_chunk_pool_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg,
                             size_t len);
/* --resident-chunks: auto or an integer >= 0 */
int dit_cli_resident_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg,
                           size_t len);
/* --lora [EXPERT=]FILE[:STRENGTH], repeatable */
int dit_cli_lora_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);
/* the library's names: --offload, --solver, --workers, --weight-dtype */
int dit_cli_offload_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);
int dit_cli_solver_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);
int dit_cli_workers_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);
int dit_cli_wdtype_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);
int dit_cli_adtype_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg, size_t len);
/* --sim-roofline: ditstar-sim's alone */
int dit_cli_roofline_parse(dit_cli *c, const dit_cli_opt *o, const char *arg, char *msg,
                           size_t len);

#endif

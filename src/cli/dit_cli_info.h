/* `ditstar info` (src/cli/dit_cli_info.c). */
#ifndef DIT_CLI_INFO_H
#define DIT_CLI_INFO_H

#include <stdint.h>

#include "dit_checkpoint.h"
#include "dit_error.h"

/* Opens model_dir (validating every tensor header of every expert) or the preset
 * model_name (one of them NULL) and prints its family, config, pools, sampling
 * defaults, inputs and the token count at frames x height x width (<= 0: the preset's,
 * else the family's official size). */
dit_status dit_cli_info(const char *model_dir, const char *model_name,
                        const dit_checkpoint_opts *ck, int64_t frames_opt, int64_t height_opt,
                        int64_t width_opt, dit_error *err);

#endif

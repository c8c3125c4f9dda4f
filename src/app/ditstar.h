/* ditstar: video diffusion transformers on StarPU. The library's public interface,
 * installed with libditstar and described by ditstar.pc. */
#ifndef DITSTAR_H
#define DITSTAR_H

#include "dit_error.h"
#include "dit_version.h"
#include "dit_run.h"
#include "dit_runtime.h"
#include "dit_safetensors.h"
#include "dit_checkpoint.h"
#include "dit_sampler.h"
#include "dit_wan.h"

#endif

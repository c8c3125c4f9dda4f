/* Small CPU-only ops over vectors and latents, for the conditioning and the head of
 * families composed from generic ops (HunyuanVideo, LTX-2): the timestep sinusoid, an
 * activation in place, the mean of a block of rows, unpatchify, and a vector added to
 * a block of rows. Each moves or
 * computes a few thousand floats once per step, so no device version is needed: a
 * device task that reads their output gets it moved by StarPU. */
#include "dit_codelets.h"

static void sinusoid_cpu(void *buffers[], void *cl_arg)
{
	const dit_sinusoid_args *a = cl_arg;
	dit_cpu_timestep_embedding(DIT_BUF_F32(buffers, 0), a->t, a->dim);
}

static void act_cpu(void *buffers[], void *cl_arg)
{
	const dit_act_args *a = cl_arg;
	dit_cpu_act(DIT_BUF_F32(buffers, 0), a->n, (dit_act)a->act);
}

static void row_mean_cpu(void *buffers[], void *cl_arg)
{
	const dit_row_mean_args *a = cl_arg;
	dit_cpu_row_mean(DIT_BUF_F32(buffers, 1), DIT_BUF_F32(buffers, 0), a->dim, a->rows, a->dim);
}

static void unpatchify_cpu(void *buffers[], void *cl_arg)
{
	const dit_unpatchify_args *a = cl_arg;
	void (*f)(float *, const float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
	          int64_t) = a->c_outer ? dit_cpu_unpatchify_c_outer : dit_cpu_unpatchify;
	f(DIT_BUF_F32(buffers, 1), DIT_BUF_F32(buffers, 0), a->c, a->tf, a->th, a->tw, a->pt, a->ph,
	  a->pw);
}

static void add_rows_cpu(void *buffers[], void *cl_arg)
{
	const dit_add_rows_args *a = cl_arg;
	dit_cpu_add_rows(DIT_BUF_F32(buffers, 0) + a->r0 * a->ld, a->ld,
	                 DIT_BUF_F32(buffers, 1) + a->v_off, a->v_ld, a->rows, a->dim);
}

DIT_PERFMODEL(sinusoid_model, "dit_sinusoid");
DIT_PERFMODEL(add_rows_model, "dit_add_rows");
DIT_PERFMODEL(act_model, "dit_act");
DIT_PERFMODEL(row_mean_model, "dit_row_mean");
DIT_PERFMODEL(unpatchify_model, "dit_unpatchify");

struct starpu_codelet dit_cl_sinusoid = {
    .name = "sinusoid",
    .cpu_funcs = {sinusoid_cpu},
    .cpu_funcs_name = {"sinusoid_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &sinusoid_model,
};

struct starpu_codelet dit_cl_act = {
    .name = "act",
    .cpu_funcs = {act_cpu},
    .cpu_funcs_name = {"act_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &act_model,
};

struct starpu_codelet dit_cl_row_mean = {
    .name = "row_mean",
    .cpu_funcs = {row_mean_cpu},
    .cpu_funcs_name = {"row_mean_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &row_mean_model,
};

struct starpu_codelet dit_cl_unpatchify = {
    .name = "unpatchify",
    .cpu_funcs = {unpatchify_cpu},
    .cpu_funcs_name = {"unpatchify_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &unpatchify_model,
};

struct starpu_codelet dit_cl_add_rows = {
    .name = "add_rows",
    .cpu_funcs = {add_rows_cpu},
    .cpu_funcs_name = {"add_rows_cpu"},
    .nbuffers = STARPU_VARIABLE_NBUFFERS,
    .model = &add_rows_model,
};

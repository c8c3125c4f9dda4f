/* ditstar-sim's roofline lengths (see dit_roofline.h). */
#include "dit_roofline.h"

#include <errno.h>
#include <json-c/json.h>
#include <starpu.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[DIT_ROOF_KINDS] = {"cpu", "cuda", "opencl"};
static const char *const fields[4] = {"gemm_gflops", "attention_gflops", "mem_gbps", "task_us"};

dit_status dit_roofline_load(dit_roofline *r, const char *path, dit_error *err)
{
	memset(r, 0, sizeof *r);
#ifndef DIT_SIMGRID
	return dit_error_set(err, DIT_EUSAGE, "--sim-roofline %s: only ditstar-sim simulates",
	                     path);
#endif
	FILE *f = fopen(path, "r");
	if (!f)
		return dit_error_set(err, errno == ENOENT ? DIT_ENOTFOUND : DIT_EIO,
		                     "%s: cannot open (--sim-roofline): %s", path, strerror(errno));
	fclose(f);
	json_object *root = json_object_from_file(path);
	if (!root || !json_object_is_type(root, json_type_object)) {
		if (root)
			json_object_put(root);
		return dit_error_set(err, DIT_EFORMAT, "%s: not a JSON object (--sim-roofline)",
		                     path);
	}
	dit_status st = DIT_OK;
	int nkinds = 0;
	json_object_object_foreach(root, key, val)
	{
		if (strcmp(key, "name") == 0) {
			if (!json_object_is_type(val, json_type_string)) {
				st = dit_error_set(err, DIT_EFORMAT, "%s: 'name' must be a string",
				                   path);
				break;
			}
			snprintf(r->name, sizeof r->name, "%s", json_object_get_string(val));
			continue;
		}
		int k = -1;
		for (int i = 0; i < DIT_ROOF_KINDS; i++)
			if (strcmp(key, kind_names[i]) == 0)
				k = i;
		if (k < 0 || !json_object_is_type(val, json_type_object)) {
			st = dit_error_set(err, DIT_EFORMAT,
			                   "%s: key '%s': expected name, cpu, cuda or opencl "
			                   "(an object of %s, %s, %s, %s)",
			                   path, key, fields[0], fields[1], fields[2], fields[3]);
			break;
		}
		double v[4];
		for (int f = 0; f < 4 && !st; f++) {
			json_object *x;
			if (!json_object_object_get_ex(val, fields[f], &x) ||
			    !(json_object_is_type(x, json_type_double) ||
			      json_object_is_type(x, json_type_int)) ||
			    !isfinite(v[f] = json_object_get_double(x)) || v[f] < 0 ||
			    (f < 3 && v[f] <= 0))
				st = dit_error_set(err, DIT_EFORMAT,
				                   "%s: %s.%s must be a number %s 0", path, key,
				                   fields[f], f < 3 ? ">" : ">=");
		}
		if (!st && json_object_object_length(val) != 4)
			st = dit_error_set(err, DIT_EFORMAT, "%s: %s: only %s, %s, %s and %s", path,
			                   key, fields[0], fields[1], fields[2], fields[3]);
		if (st)
			break;
		r->kind[k] = (struct dit_roof_kind){1, v[0], v[1], v[2], v[3]};
		nkinds++;
	}
	json_object_put(root);
	if (!st && !nkinds)
		st = dit_error_set(err, DIT_EFORMAT,
		                   "%s: describes no kind of worker (cpu, "
		                   "cuda, opencl)",
		                   path);
	return st;
}

int dit_roofline_kind(int type)
{
	switch ((enum starpu_worker_archtype)type) {
	case STARPU_CPU_WORKER: return DIT_ROOF_CPU;
	case STARPU_CUDA_WORKER: return DIT_ROOF_CUDA;
	case STARPU_OPENCL_WORKER: return DIT_ROOF_OPENCL;
	default: return -1;
	}
}

double dit_roofline_us(const dit_roofline *r, int k, const struct starpu_task *t)
{
	const struct dit_roof_kind *c = &r->kind[k];
	const char *name = t->cl && t->cl->name ? t->cl->name : "";
	if (strcmp(name, "xfer") == 0)
		return c->task_us;
	double bytes = 0;
	for (int i = 0; i < t->nbuffers; i++)
		bytes += (double)starpu_data_get_size(STARPU_TASK_GET_HANDLE(t, i));
	double rate = strcmp(name, "attention") == 0 ? c->attention_gflops : c->gemm_gflops;
	double compute = t->flops > 0 ? t->flops / (rate * 1e3) : 0; /* us */
	double memory = bytes / (c->mem_gbps * 1e3);
	return c->task_us + (compute > memory ? compute : memory);
}

/* the runtime's roofline (one runtime per process) */
static const dit_roofline *active;

void dit_roofline_attach(const dit_roofline *r)
{
	active = r;
}

const char *dit_roofline_attached(void)
{
	return active ? active->name : NULL;
}

static double roof_cost(struct starpu_task *t, struct starpu_perfmodel_arch *arch, unsigned nimpl)
{
	(void)nimpl;
	int k = arch && arch->ndevices > 0 ? dit_roofline_kind((int)arch->devices[0].type) : -1;
	if (!active || k < 0 || !active->kind[k].set)
		return NAN;
	return dit_roofline_us(active, k, t);
}

void dit_roofline_use(struct starpu_codelet *cl)
{
	if (active && cl->model && cl->model->type != STARPU_PER_ARCH) {
		cl->model->type = STARPU_PER_ARCH;
		cl->model->arch_cost_function = roof_cost;
	}
}

/* cfg: out[i] = uncond[i] + scale * (cond[i] - uncond[i]) in fp32, as dit_cpu_cfg.
 * One work-item per element. */
kernel void dit_cfg(global float *out, long out_off, global const float *cond, long cond_off,
                    global const float *uncond, long uncond_off, long n, float scale)
{
	size_t i = get_global_id(0);
	if (i >= (size_t)n)
		return;
	float u = uncond[uncond_off + i];
	float d = cond[cond_off + i] - u;
	out[out_off + i] = u + scale * d;
}

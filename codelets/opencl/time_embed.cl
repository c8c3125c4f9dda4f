/* time_embed helpers; the three linears are dit_linear.
 *
 * dit_timestep_embedding: out[k] = cos(t w_k), out[nh + k] = sin(t w_k),
 * w_k = 10000^(-k / nh), nh = freq_dim / 2, in float64 then rounded, as
 * dit_cpu_timestep_embedding. Only built with float64; without it the host computes
 * the sinusoid and writes it.
 *
 * dit_act_copy: dst[i] = act(src[i]). */
#ifdef DIT_FP64
kernel void dit_timestep_embedding(global float *out, long out_off, double t, int nh)
{
	int k = (int)get_global_id(0);
	if (k >= nh)
		return;
	double wk = pow(10000.0, -(double)k / (double)nh);
	double a = t * wk;
	out[out_off + k] = (float)cos(a);
	out[out_off + nh + k] = (float)sin(a);
}
#endif

kernel void dit_act_copy(global float *dst, long dst_off, global const float *src, long src_off,
                         long n, int act)
{
	size_t i = get_global_id(0);
	if (i >= (size_t)n)
		return;
	dst[dst_off + i] = dit_act(src[src_off + i], act);
}

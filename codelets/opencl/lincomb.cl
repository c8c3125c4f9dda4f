/* lincomb: out[i] = sum_t coef_t * in_t[i] over nterms <= 4 terms, accumulated in
 * dit_acc (float64 where the device has it) in term order and rounded once, as
 * dit_cpu_lincomb. Every input of an element is read before the element is written,
 * so out may be one of the inputs. Unused terms are ignored. */
kernel void dit_lincomb(global float *out, long out_off, long n, int nterms,
                        global const float *in0, long off0, dit_acc c0, global const float *in1,
                        long off1, dit_acc c1, global const float *in2, long off2, dit_acc c2,
                        global const float *in3, long off3, dit_acc c3)
{
	size_t i = get_global_id(0);
	if (i >= (size_t)n)
		return;
	dit_acc acc = 0;
	if (nterms > 0)
		acc += c0 * (dit_acc)in0[off0 + i];
	if (nterms > 1)
		acc += c1 * (dit_acc)in1[off1 + i];
	if (nterms > 2)
		acc += c2 * (dit_acc)in2[off2 + i];
	if (nterms > 3)
		acc += c3 * (dit_acc)in3[off3 + i];
	out[out_off + i] = (float)acc;
}

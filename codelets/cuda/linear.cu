/* Fully connected layer: cuBLAS GEMM (bf16 or fp32 weights) then one fused bias +
 * activation pass; and the fp32 -> bf16 row conversion it uses. */
#include <limits.h>
#include <stdint.h>

#include "dit_cuda_common.cuh"

#define DIT_ROWS_GRID_MAX 65535 /* grid.y cap of the row-wise 2D kernels */

/* 2D launch shape for rows x (cols / vec) items: grid.x over column chunks, grid.y over
 * rows (rows beyond the cap by a grid-stride loop). */
static dim3 dit_rows_grid(int64_t rows, int64_t items_per_row)
{
	int64_t gx = (items_per_row + DIT_CUDA_THREADS - 1) / DIT_CUDA_THREADS;
	int64_t gy = rows < DIT_ROWS_GRID_MAX ? rows : DIT_ROWS_GRID_MAX;
	return dim3((unsigned)(gx > 0 ? gx : 1), (unsigned)(gy > 0 ? gy : 1), 1);
}

/* dst[rows, cols] (ldd) = bf16(src[rows, cols] (lds)), one element per thread. */
__global__ void dit_f32_to_bf16_kernel(uint16_t *dst, int64_t ldd, const float *src, int64_t lds,
                                       int64_t rows, int64_t cols)
{
	int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
		dst[r * ldd + c] = dit_f32_to_bf16_bits(src[r * lds + c]);
}

/* Same, 4 columns per thread: src rows 16-byte aligned, dst rows 8-byte aligned,
 * cols % 4 == 0. */
__global__ void dit_f32_to_bf16_kernel4(uint16_t *dst, int64_t ldd, const float *src, int64_t lds,
                                        int64_t rows, int64_t cols)
{
	int64_t c4 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c4 * 4 >= cols)
		return;
	for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
		float4 v = *(const float4 *)(src + r * lds + c4 * 4);
		uint2 o;
		o.x = (uint32_t)dit_f32_to_bf16_bits(v.x) |
		      ((uint32_t)dit_f32_to_bf16_bits(v.y) << 16);
		o.y = (uint32_t)dit_f32_to_bf16_bits(v.z) |
		      ((uint32_t)dit_f32_to_bf16_bits(v.w) << 16);
		*(uint2 *)(dst + r * ldd + c4 * 4) = o;
	}
}

/* dst[rows, cols] (ldd) = the fp32 values of the bf16 src[rows, cols] (lds), exact. */
__global__ void dit_bf16_to_f32_kernel(float *dst, int64_t ldd, const uint16_t *src, int64_t lds,
                                       int64_t rows, int64_t cols)
{
	int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
		dst[r * ldd + c] = dit_ld1(src + r * lds + c);
}

extern "C" int dit_cuda_f32_to_bf16(cudaStream_t s, uint16_t *dst, int64_t ldd, const float *src,
                                    int64_t lds, int64_t rows, int64_t cols)
{
	if (rows <= 0 || cols <= 0)
		return 0;
	int vec = dit_cuda_aligned16(src) && lds % 4 == 0 && ((uintptr_t)dst & 7u) == 0 &&
	          ldd % 4 == 0 && cols % 4 == 0;
	if (vec)
		dit_f32_to_bf16_kernel4<<<dit_rows_grid(rows, cols / 4), DIT_CUDA_THREADS, 0, s>>>(
		    dst, ldd, src, lds, rows, cols);
	else
		dit_f32_to_bf16_kernel<<<dit_rows_grid(rows, cols), DIT_CUDA_THREADS, 0, s>>>(
		    dst, ldd, src, lds, rows, cols);
	return dit_cuda_last_error();
}

/* y[r, c] = act(y[r, c] + b[c]) for y [rows, cols] (ldy) of fp32 or bf16 T; b may be
 * NULL. The add and the activation round separately, as the CPU kernel. */
template <typename T>
__global__ void dit_bias_act_kernel(T *y, int64_t ldy, const float *b, int64_t rows, int64_t cols,
                                    dit_act act)
{
	int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= cols)
		return;
	float bc = b ? b[c] : 0.0f;
	for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
		float v = dit_ld1(y + r * ldy + c);
		if (b)
			v = __fadd_rn(v, bc);
		dit_st1(y + r * ldy + c, dit_act_apply(v, act));
	}
}

/* Same, 4 columns per thread (y rows and b 16-byte aligned, cols % 4 == 0). */
__global__ void dit_bias_act_kernel4(float *y, int64_t ldy, const float *b, int64_t rows,
                                     int64_t cols, dit_act act)
{
	int64_t c4 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (c4 * 4 >= cols)
		return;
	float4 bc = b ? *(const float4 *)(b + c4 * 4) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
		float4 *p = (float4 *)(y + r * ldy + c4 * 4);
		float4 v = *p;
		if (b) {
			v.x = __fadd_rn(v.x, bc.x);
			v.y = __fadd_rn(v.y, bc.y);
			v.z = __fadd_rn(v.z, bc.z);
			v.w = __fadd_rn(v.w, bc.w);
		}
		v.x = dit_act_apply(v.x, act);
		v.y = dit_act_apply(v.y, act);
		v.z = dit_act_apply(v.z, act);
		v.w = dit_act_apply(v.w, act);
		*p = v;
	}
}

static int dit_cublas_err(cublasStatus_t st)
{
	return st == CUBLAS_STATUS_SUCCESS ? 0 : DIT_CUDA_CUBLAS_ERR_BASE + (int)st;
}

/* fp32 weights with bf16 activations: a tile of rows at a time through fp32 copies in
 * the scratch (sf, sfn floats): x's rows widened there, y's computed there (the GEMM,
 * bias and activation of the fp32 path) then rounded into y. */
static int linear_f32w_bf16(cublasHandle_t h, cudaStream_t s, void *y, int y_bf16, int64_t ldy,
                            const void *x, int x_bf16, int64_t ldx, const float *w, const float *b,
                            int64_t m, int64_t n, int64_t k, dit_act act, float *sf, size_t sfn)
{
	const int64_t per = (x_bf16 ? k : 0) + (y_bf16 ? n : 0); /* scratch floats per row */
	int64_t tile = sf && per > 0 ? (int64_t)(sfn / (size_t)per) : 0;
	if (tile < 1)
		return (int)cudaErrorInvalidValue;
	if (tile > m)
		tile = m;
	const float alpha = 1.0f, beta = 0.0f;
	for (int64_t r0 = 0; r0 < m; r0 += tile) {
		int64_t mt = m - r0 < tile ? m - r0 : tile;
		const float *xt = (const float *)x + (x_bf16 ? 0 : r0 * ldx);
		int64_t ldxt = ldx;
		if (x_bf16) {
			dit_bf16_to_f32_kernel<<<dit_rows_grid(mt, k), DIT_CUDA_THREADS, 0, s>>>(
			    sf, k, (const uint16_t *)x + r0 * ldx, ldx, mt, k);
			xt = sf;
			ldxt = k;
		}
		float *yt = y_bf16 ? sf + (x_bf16 ? tile * k : 0) : (float *)y + r0 * ldy;
		int64_t ldyt = y_bf16 ? n : ldy;
		int err = dit_cublas_err(cublasGemmEx(
		    h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)mt, (int)k, &alpha, w, CUDA_R_32F,
		    (int)k, xt, CUDA_R_32F, (int)ldxt, &beta, yt, CUDA_R_32F, (int)ldyt,
		    CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
		if (err)
			return err;
		if (b || act != DIT_ACT_NONE)
			dit_bias_act_kernel<float>
			    <<<dit_rows_grid(mt, n), DIT_CUDA_THREADS, 0, s>>>(yt, ldyt, b, mt, n,
			                                                       act);
		if (y_bf16 && (err = dit_cuda_f32_to_bf16(s, (uint16_t *)y + r0 * ldy, ldy, yt,
		                                          ldyt, mt, n)) != 0)
			return err;
	}
	return dit_cuda_last_error();
}

extern "C" int dit_cuda_linear_act(cublasHandle_t h, cudaStream_t s, void *y, int y_bf16,
                                   int64_t ldy, const void *x, int x_bf16, int64_t ldx,
                                   const void *w, int w_bf16, const float *b, int64_t m, int64_t n,
                                   int64_t k, dit_act act, uint16_t *scratch, size_t scratch_elems)
{
	if (m <= 0 || n <= 0)
		return 0;
	if (k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX || ldy < n || ldy > INT_MAX ||
	    ldx > INT_MAX || (k > 0 && ldx < k))
		return (int)cudaErrorInvalidValue;
	cublasPointerMode_t pm;
	int err = dit_cublas_err(cublasGetPointerMode(h, &pm));
	if (err)
		return err;
	if (pm != CUBLAS_POINTER_MODE_HOST)
		return (int)cudaErrorInvalidValue;
	const float alpha = 1.0f, beta = 0.0f;
	const size_t ysz = y_bf16 ? sizeof(uint16_t) : sizeof(float);
	const cudaDataType yt = y_bf16 ? CUDA_R_16BF : CUDA_R_32F;
	if (k == 0) {
		/* an empty sum: y = 0 */
		err =
		    (int)cudaMemset2DAsync(y, (size_t)ldy * ysz, 0, (size_t)n * ysz, (size_t)m, s);
		if (err)
			return err;
	} else if (w_bf16 && x_bf16) {
		/* Column-major view: y^T[n, m] = w[k, n]^T . x^T[k, m], x as it is */
		err = dit_cublas_err(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m,
		                                  (int)k, &alpha, w, CUDA_R_16BF, (int)k, x,
		                                  CUDA_R_16BF, (int)ldx, &beta, y, yt, (int)ldy,
		                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		if (err)
			return err;
	} else if (w_bf16) {
		if (!scratch || scratch_elems < (size_t)k)
			return (int)cudaErrorInvalidValue;
		int64_t tile = (int64_t)(scratch_elems / (size_t)k); /* rows of x per GEMM */
		if (tile > m)
			tile = m;
		const float *xf = (const float *)x;
		for (int64_t r0 = 0; r0 < m; r0 += tile) {
			int64_t mt = m - r0 < tile ? m - r0 : tile;
			/* scratch[mt, k] = bf16(x[r0 : r0 + mt, :k]) */
			err = dit_cuda_f32_to_bf16(s, scratch, k, xf + r0 * ldx, ldx, mt, k);
			if (err)
				return err;
			/* Column-major view: y^T[n, mt] = w[k, n]^T . xt[k, mt] */
			err = dit_cublas_err(
			    cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)mt, (int)k,
			                 &alpha, w, CUDA_R_16BF, (int)k, scratch, CUDA_R_16BF,
			                 (int)k, &beta, (char *)y + (size_t)(r0 * ldy) * ysz, yt,
			                 (int)ldy, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
			if (err)
				return err;
		}
	} else if (x_bf16 || y_bf16) {
		return linear_f32w_bf16(h, s, y, y_bf16, ldy, x, x_bf16, ldx, (const float *)w, b,
		                        m, n, k, act, (float *)scratch, scratch_elems / 2);
	} else {
		/* Column-major view: y^T[n, m] = w[k, n]^T . x^T[k, m] */
		err = dit_cublas_err(
		    cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, w,
		                 CUDA_R_32F, (int)k, x, CUDA_R_32F, (int)ldx, &beta, y, CUDA_R_32F,
		                 (int)ldy, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
		if (err)
			return err;
	}
	if (!b && act == DIT_ACT_NONE)
		return 0;
	if (y_bf16) {
		dit_bias_act_kernel<uint16_t><<<dit_rows_grid(m, n), DIT_CUDA_THREADS, 0, s>>>(
		    (uint16_t *)y, ldy, b, m, n, act);
		return dit_cuda_last_error();
	}
	float *yf = (float *)y;
	int vec =
	    dit_cuda_aligned16(yf) && ldy % 4 == 0 && n % 4 == 0 && (!b || dit_cuda_aligned16(b));
	if (vec)
		dit_bias_act_kernel4<<<dit_rows_grid(m, n / 4), DIT_CUDA_THREADS, 0, s>>>(
		    yf, ldy, b, m, n, act);
	else
		dit_bias_act_kernel<float>
		    <<<dit_rows_grid(m, n), DIT_CUDA_THREADS, 0, s>>>(yf, ldy, b, m, n, act);
	return dit_cuda_last_error();
}

extern "C" int dit_cuda_linear(cublasHandle_t h, cudaStream_t s, float *y, int64_t ldy,
                               const float *x, int64_t ldx, const void *w, int w_bf16,
                               const float *b, int64_t m, int64_t n, int64_t k, dit_act act,
                               uint16_t *scratch, size_t scratch_elems)
{
	return dit_cuda_linear_act(h, s, y, 0, ldy, x, 0, ldx, w, w_bf16, b, m, n, k, act, scratch,
	                           scratch_elems);
}

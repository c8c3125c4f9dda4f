/* Shapes and slab layouts of tensor tables under a model's hyper-parameters. */
#include "dit_hparams.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int64_t dit_sym_value(const dit_hparams *hp, dit_sym s)
{
	switch (s) {
	case DIT_SYM_ONE: return 1;
	case DIT_SYM_TWO: return 2;
	case DIT_SYM_SIX: return 6;
	case DIT_SYM_D: return hp->dim;
	case DIT_SYM_F: return hp->ffn_dim;
	case DIT_SYM_6D: return 6 * hp->dim;
	case DIT_SYM_TEXT: return hp->text_dim;
	case DIT_SYM_FREQ: return hp->freq_dim;
	case DIT_SYM_IN: return hp->in_dim;
	case DIT_SYM_OUTP: return hp->out_dim * hp->patch[0] * hp->patch[1] * hp->patch[2];
	case DIT_SYM_PT: return hp->patch[0];
	case DIT_SYM_PH: return hp->patch[1];
	case DIT_SYM_PW: return hp->patch[2];
	case DIT_SYM_2D: return 2 * hp->dim;
	case DIT_SYM_3D: return 3 * hp->dim;
	case DIT_SYM_4D: return 4 * hp->dim;
	case DIT_SYM_HD: return hp->head_dim;
	case DIT_SYM_TEXT2: return hp->text_dim_2;
	case DIT_SYM_3D_F: return 3 * hp->dim + hp->ffn_dim;
	case DIT_SYM_D_F: return hp->dim + hp->ffn_dim;
	case DIT_SYM_FIVE: return 5;
	case DIT_SYM_HEADS: return hp->num_heads;
	case DIT_SYM_DA: return hp->aux_dim;
	case DIT_SYM_FA: return hp->aux_ffn_dim;
	case DIT_SYM_2DA: return 2 * hp->aux_dim;
	case DIT_SYM_4DA: return 4 * hp->aux_dim;
	case DIT_SYM_AIN: return hp->aux_in;
	case DIT_SYM_AOUT: return hp->aux_out;
	case DIT_SYM_ATEXT: return hp->aux_text_dim;
	case DIT_SYM_NT: return hp->ada_rows;
	case DIT_SYM_NTD: return hp->ada_rows * hp->dim;
	case DIT_SYM_NTDA: return hp->ada_rows * hp->aux_dim;
	case DIT_SYM_LORA: return hp->lora_dim;
	case DIT_SYM_INP: return hp->in_dim * hp->patch[0] * hp->patch[1] * hp->patch[2];
	case DIT_SYM_CROSS: return hp->cross_dim;
	case DIT_SYM_IMG: return hp->image_dim;
	case DIT_SYM_IMGN: return hp->image_tokens;
	}
	return 0;
}

int dit_tensor_present(const dit_hparams *hp, const dit_tensor_desc *t)
{
	switch ((dit_when)((t->flags >> 8) & 0xffu)) {
	case DIT_W_ALWAYS: return 1;
	case DIT_W_GATED: return hp->gated_attn != 0;
	case DIT_W_CA_ADALN: return hp->ca_adaln != 0;
	case DIT_W_PROMPT_ADALN: return hp->ca_adaln && hp->prompt_adaln;
	case DIT_W_FF_BIAS: return hp->ff_bias != 0;
	case DIT_W_AUX_FF_BIAS: return hp->aux_ff_bias != 0;
	case DIT_W_CAPTION: return hp->caption_outside == 0;
	case DIT_W_KEYFRAMES: return hp->keyframes != 0;
	case DIT_W_IMAGE: return hp->image_dim != 0;
	case DIT_W_IMAGE_POS: return hp->image_dim != 0 && hp->image_pos != 0;
	}
	return 1;
}

int dit_tensor_shape(const dit_hparams *hp, const dit_tensor_desc *t, int64_t *shape)
{
	int on = dit_tensor_present(hp, t);
	for (int i = 0; i < t->ndim; i++)
		shape[i] = on ? dit_sym_value(hp, t->dims[i]) : 0;
	return t->ndim;
}

void dit_layout_init_wdt(dit_layout *lay, const dit_hparams *hp, const dit_tensor_desc *t, int n,
                         const unsigned char *mwdt)
{
	int64_t off = 0;
	int over = 0; /* sizes at the config caps can overflow 64 bits: size -1 then */
	lay->n = n;
	lay->narrow = 0;
	for (int i = 0; i < n && i < DIT_MAX_TENSORS; i++) {
		int64_t shape[DIT_T_MAX_DIMS], numel = 1;
		int nd = dit_tensor_shape(hp, &t[i], shape);
		for (int d = 0; d < nd; d++)
			over |= __builtin_mul_overflow(numel, shape[d], &numel);
		int w = mwdt && (t[i].flags & DIT_T_MATRIX) ? mwdt[i] : DIT_WDT_F32;
		if (w >= DIT_WDT_F16) /* 16-byte aligned data */
			off = (off + 3) / 4 * 4;
		lay->off[i] = off;
		lay->numel[i] = numel;
		lay->wdt[i] = (unsigned char)w;
		lay->narrow |= w != DIT_WDT_F32;
		int64_t slots = over || numel > INT64_MAX / 4 ? 0 : dit_wdt_slots(w, numel);
		over |= numel > INT64_MAX / 4 || __builtin_add_overflow(off, slots, &off);
	}
	lay->size = over ? -1 : off;
}

void dit_layout_init(dit_layout *lay, const dit_hparams *hp, const dit_tensor_desc *t, int n,
                     int bf16)
{
	unsigned char w[DIT_MAX_TENSORS];
	memset(w, bf16 ? DIT_WDT_BF16 : DIT_WDT_F32, sizeof w);
	dit_layout_init_wdt(lay, hp, t, n, w);
}

void dit_layout_tag(const dit_layout *lay, const dit_tensor_desc *t, char *buf, size_t len)
{
	int seen[DIT_WDT_COUNT] = {0};
	for (int i = 0; i < lay->n && i < DIT_MAX_TENSORS; i++)
		if ((t[i].flags & DIT_T_MATRIX) && lay->numel[i] > 0)
			seen[lay->wdt[i] < DIT_WDT_COUNT ? lay->wdt[i] : 0] = 1;
	size_t used = 0;
	if (len)
		buf[0] = '\0';
	for (int w = 1; w <= DIT_WDT_COUNT; w++) { /* f32 last */
		int d = w % DIT_WDT_COUNT;
		if (seen[d] && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "+" : "",
			                         dit_wdt_name(d));
	}
	if (!used && len)
		snprintf(buf, len, "f32");
}

void dit_layout_bytes_by_wdt(const dit_layout *lay, int64_t bytes[DIT_WDT_COUNT])
{
	memset(bytes, 0, DIT_WDT_COUNT * sizeof *bytes);
	for (int i = 0; i < lay->n && i < DIT_MAX_TENSORS; i++) {
		int w = lay->wdt[i] < DIT_WDT_COUNT ? lay->wdt[i] : 0;
		bytes[w] += dit_wdt_data_bytes(w, lay->numel[i]) + (dit_wdt_is_f8(w) ? 4 : 0);
	}
}

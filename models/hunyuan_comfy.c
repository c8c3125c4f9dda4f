/* HunyuanVideo as ComfyUI names it inside (comfy/ldm/hunyuan_video/model.py, Flux's
 * layers): ComfyUI loads the official names and renames them as its
 * supported_models.HunyuanVideo.process_unet_state_dict does, so a model ComfyUI saves
 * holds these. Pairs (ComfyUI's name, the official one), block tensors after their
 * pool's prefix: the double blocks' two streams, the single blocks', the embedders'
 * (MLPEmbedder: in_layer, out_layer) and the token refiner's blocks'. */
#include "dit_hunyuan.h"

#define TWO(from, to)                                                                              \
	{from "weight", to "weight"},                                                              \
	{                                                                                          \
		from "bias", to "bias"                                                             \
	}
#define STREAM(s)                                                                                  \
	TWO(s "_mod.lin.", s "_mod.linear."), TWO(s "_attn.qkv.", s "_attn_qkv."),                 \
	    {s "_attn.norm.query_norm.scale", s "_attn_q_norm.weight"},                            \
	    {s "_attn.norm.key_norm.scale", s "_attn_k_norm.weight"},                              \
	    TWO(s "_attn.proj.", s "_attn_proj."), TWO(s "_mlp.0.", s "_mlp.fc1."),                \
	    TWO(s "_mlp.2.", s "_mlp.fc2.")
#define RB(n) "txt_in.individual_token_refiner.blocks." #n "."
#define REFINER(n)                                                                                 \
	TWO(RB(n) "self_attn.qkv.", RB(n) "self_attn_qkv."),                                       \
	    TWO(RB(n) "self_attn.proj.", RB(n) "self_attn_proj."),                                 \
	    TWO(RB(n) "mlp.0.", RB(n) "mlp.fc1."), TWO(RB(n) "mlp.2.", RB(n) "mlp.fc2.")
#define SINGLE                                                                                     \
	TWO("modulation.lin.", "modulation.linear."), {"norm.query_norm.scale", "q_norm.weight"},  \
	{                                                                                          \
		"norm.key_norm.scale", "k_norm.weight"                                             \
	}
#define EMBEDDERS                                                                                  \
	TWO("time_in.in_layer.", "time_in.mlp.0."), TWO("time_in.out_layer.", "time_in.mlp.2."),   \
	    TWO("guidance_in.in_layer.", "guidance_in.mlp.0."),                                    \
	    TWO("guidance_in.out_layer.", "guidance_in.mlp.2."),                                   \
	    TWO("txt_in.t_embedder.in_layer.", "txt_in.t_embedder.mlp.0."),                        \
	    TWO("txt_in.t_embedder.out_layer.", "txt_in.t_embedder.mlp.2."),                       \
	    TWO("txt_in.c_embedder.in_layer.", "txt_in.c_embedder.linear_1."),                     \
	    TWO("txt_in.c_embedder.out_layer.", "txt_in.c_embedder.linear_2.")
#define COMFY_NAMES STREAM("img"), STREAM("txt"), SINGLE, EMBEDDERS, REFINER(0), REFINER(1)

const dit_rename dit_hunyuan_comfy_names[DIT_HUNYUAN_COMFY_NAMES] = {COMFY_NAMES};
/* the header's count is the list's */
_Static_assert(sizeof((dit_rename[]){COMFY_NAMES}) / sizeof(dit_rename) == DIT_HUNYUAN_COMFY_NAMES,
               "the list's length");

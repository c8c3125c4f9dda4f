/* The ditstar command's commands and their --help texts; the options in them come from
 * the option table (dit_cli_options.c). See dit_cli_help.h. */
#include "dit_cli_help.h"

#include <string.h>

#include "dit_cli_doc.h"
#include "dit_cli_opt.h"

#define WIDTH    80 /* --help's lines */
#define TAB      23 /* the column of an option's text */
#define LIST_TAB 13 /* the column of a command's line in the overview */

const dit_cli_command dit_cli_commands[] = {
    {"generate", DIT_CLI_GENERATE, "generate",
     "full sampling loop to latents (default: built-in tiny model)", "[options]",
     "Runs the full sampling loop (flow matching with classifier-free guidance) and writes "
     "the final latents. Without options it runs the built-in tiny Wan model."},
    {"plan", DIT_CLI_PLAN, "plan", "the offload plan of a generate run, without running it",
     "[generate options] [--json]",
     "The offload plan a generate run with the same options would follow, decided as the "
     "run decides it, printed without reading tensor data or running a task (the same as "
     "`ditstar generate --dry-run`): per pool the chunks kept resident on the compute node "
     "and the bytes streamed a step; the compute node's budget and what it holds (non-block "
     "weights, resident chunks, streaming slots, activations) and StarPU's memory limits; "
     "the bytes each link carries a step; and, once `ditstar calibrate` has run with the "
     "same options, the predicted s/step with its compute and exposed transfer parts (else "
     "why there is none). StarPU starts (no task) to count the device's memory without "
     "`--device-mem-limit` and to read its models. A plan runs nothing: `--output`, "
     "`--stats-json`, `--trace`, `--state`, `--resume` and `--preview` do not apply."},
    {"calibrate", DIT_CLI_CALIBRATE, "calibrate",
     "StarPU's performance models for a generate run's shapes", "[generate options] [--rounds N]",
     "Runs the graph of the generate command with the same options (`--steps` default 5, "
     "no output written), StarPU updating its performance models from every measure, round "
     "after round until a round runs no compute task whose model lacks an estimate for its "
     "shape on its worker's architecture; StarPU calibrates the buses the first time it "
     "starts under a `STARPU_HOME`. Prints each round's count and where the models are "
     "(`$STARPU_PERF_MODEL_DIR`, else `${STARPU_HOME:-$HOME}/.starpu/sampling`); fails when "
     "the last round still had over 5% of its tasks without an estimate. Also records the "
     "step profile the plan's time model prices (which tasks a step runs, under `ditstar/` "
     "in that folder) and, with `--offload disk`, the chunk store's read rate in one more "
     "round run as a run goes."},
    {"sched", 0, "sched list", "StarPU's scheduling policies (`--sched help`: the same)", "list",
     "StarPU's scheduling policies, one a line: the name `--sched` takes, its marks and "
     "its description. `default`: the scheduler without `--sched` or STARPU_SCHED; "
     "`priorities`: it reads the tasks' priorities (`--priorities` changes nothing on "
     "the others, whose range is one value: a run asking for a scheme there says so); "
     "`models`: it places tasks by their calibrated performance models (`ditstar "
     "calibrate`)."},
    {"trace", 0, "trace summarize DIR [--json]",
     "busy and idle per worker and step, transfers hidden and exposed, bytes per link and "
     "the critical path of a `--trace DIR` run",
     "summarize DIR [--json]",
     "What a `--trace DIR` run did, from its `tasks.rec` and `paje.trace`: the makespan, "
     "each worker's busy and idle share (of the run and of each step), the transfers' time "
     "hidden under compute and exposed, bytes per link, and the critical path (the longest "
     "chain of dependent tasks) against the makespan; `--json`: the same as JSON."},
    {"forward", DIT_CLI_FORWARD, "forward", "one DiT forward on given inputs",
     "--model-dir DIR --inputs FILE --output FILE [options]",
     "One DiT forward. `--inputs` holds `x` `[C, F, H, W]` (latent), `t` `[1]` (timestep, "
     "0..1000; Wan2.2 also `[L]`, one per token) and `context` `[L, text_dim]`, and for "
     "I2V-A14B `y` `[in_dim - C, F, H, W]`; HunyuanVideo `x`, `t`, `text_states` "
     "`[L, 4096]`, `text_mask` `[L]`, `text_states_2` `[768]` and `guidance` `[1]` (the "
     "scale x 1000); LTX-2 `video_latent`, `video_sigma` `[1]` (0..1), `video_context` and "
     "the `audio_*` of the same (optional: per-token timesteps, context masks, positions; "
     "no `audio_latent`: video only); Cosmos `x`, `timesteps` `[F]` (one per latent frame), "
     "`crossattn_emb`, optional `condition_mask` `[1, F, H, W]` and `padding_mask` "
     "`[H_px, W_px]`; other tensors are ignored (`ditstar info` lists a model's inputs). "
     "Writes `y` `[C, F, H, W]` as F32 (LTX-2: `video` and `audio`)."},
    {"info", DIT_CLI_INFO, "info", "model config, sizes and token counts",
     "(--model-dir DIR [--load-key KEY] | --model NAME | --list) "
     "[--frames N --height N --width N]",
     "Shows a model's family (detected from the checkpoint), experts, config, parameter "
     "count, pools with bytes per block, sampling defaults, inputs and the token count of a "
     "size (default: the preset's, else the family's official one). `--model-dir` also "
     "checks every tensor header of the checkpoint."},
    {"help", 0, "help [COMMAND | --man | --markdown | --list | --completion]",
     "this overview, a command's help, the man page, the docs' options tables or the bash "
     "completion",
     "[COMMAND | --man | --markdown | --list | --completion]",
     "The overview of the commands; a command's help (as `ditstar COMMAND --help`); "
     "`--man`: the man page, ditstar(1), in troff; `--markdown`: the options tables of "
     "docs/usage.md with their markers; `--list`: every option and alias of the table, one "
     "a line (name, value or flag, its commands, the option an alias spells); "
     "`--completion`: a bash completion script for ditstar and ditstar-sim (installed as "
     "share/bash-completion/completions/ditstar; `. <(ditstar help --completion)` in a "
     "shell). All of them come from one table of options."},
};
const size_t dit_cli_ncommands = sizeof dit_cli_commands / sizeof dit_cli_commands[0];

const dit_cli_command *dit_cli_command_find(const char *name)
{
	for (size_t i = 0; i < dit_cli_ncommands; i++)
		if (strcmp(dit_cli_commands[i].name, name) == 0)
			return &dit_cli_commands[i];
	return NULL;
}

void dit_cli_help_main(FILE *out)
{
	char r[512];
	fputs("usage: ditstar COMMAND [options]\n\nVideo diffusion transformers on StarPU.\n\n"
	      "commands:\n",
	      out);
	for (size_t i = 0; i < dit_cli_ncommands; i++) {
		const dit_cli_command *c = &dit_cli_commands[i];
		int n = fprintf(out, "  %s", c->line);
		if (n > LIST_TAB - 1) {
			fputc('\n', out);
			n = 0;
		}
		fprintf(out, "%*s", LIST_TAB - n, "");
		dit_cli_doc_render(r, sizeof r, c->summary, DIT_DOC_TEXT);
		dit_cli_doc_wrap(out, r, LIST_TAB, LIST_TAB, WIDTH);
	}
	fputs("\n'ditstar COMMAND --help' describes each command; 'ditstar --version' prints the "
	      "version,\n'ditstar --paths' where the cache, StarPU's tools and its calibration "
	      "are.\n",
	      out);
}

/* "  --spec    text" with the text wrapped at TAB. */
static void option_line(FILE *out, const dit_cli_opt *o, const char *text)
{
	char spec[160], r[4096];
	dit_cli_doc_spec(o, spec, sizeof spec);
	int n = fprintf(out, "  %s", spec);
	if (n > TAB - 2) {
		fputc('\n', out);
		n = 0;
	}
	fprintf(out, "%*s", TAB - n, "");
	dit_cli_doc_render(r, sizeof r, text, DIT_DOC_TEXT);
	dit_cli_doc_wrap(out, r, TAB, TAB, WIDTH);
}

/* The options of group fam that command bit takes, and the family's notes. */
static void group(FILE *out, const dit_family_doc *fam, unsigned bit)
{
	char text[4096];
	size_t nopts;
	const dit_cli_opt *opts = dit_cli_table(&nopts);
	for (size_t i = 0; i < nopts; i++) {
		const dit_cli_opt *o = &opts[i];
		if (!dit_cli_doc_group_has(o, fam) || !(o->cmds & bit))
			continue;
		dit_cli_doc_text(o, 0, text, sizeof text);
		option_line(out, o, text);
	}
	for (const dit_family_note *n = fam ? fam->notes : NULL; n && n->opt; n++) {
		const dit_cli_opt *o = dit_cli_opt_find(n->opt);
		if (o && (o->cmds & bit))
			option_line(out, o, n->text);
	}
}

void dit_cli_help_command(FILE *out, const dit_cli_command *c)
{
	char r[4096], head[512];
	int n = fprintf(out, "usage: ditstar %s ", c->name);
	dit_cli_doc_wrap(out, c->args, n, n, WIDTH);
	fputc('\n', out);
	dit_cli_doc_render(r, sizeof r, c->about, DIT_DOC_TEXT);
	dit_cli_doc_wrap(out, r, 0, 0, WIDTH);
	if (!c->bit)
		return;
	fputc('\n', out);
	group(out, NULL, c->bit);
	for (size_t f = 0; f < dit_family_doc_count(); f++) {
		const dit_family_doc *fa = dit_family_doc_get(f);
		if (!dit_cli_doc_group_used(fa, c->bit))
			continue;
		snprintf(head, sizeof head, "%s: %s", fa->name, fa->about);
		dit_cli_doc_render(r, sizeof r, head, DIT_DOC_TEXT);
		fputc('\n', out);
		dit_cli_doc_wrap(out, r, 0, 0, WIDTH);
		group(out, fa, c->bit);
	}
}

void dit_cli_help_list(FILE *out)
{
	char cmds[128];
	size_t nopts;
	const dit_cli_opt *opts = dit_cli_table(&nopts);
	for (size_t i = 0; i < nopts; i++) {
		const dit_cli_opt *o = &opts[i];
		dit_cli_doc_cmds(dit_cli_opt_main(o)->cmds, cmds, sizeof cmds);
		for (char *p = cmds; (p = strstr(p, ", ")); p++)
			memmove(p + 1, p + 2, strlen(p + 2) + 1);
		fprintf(out, "%s %s %s %s\n", o->name,
		        dit_cli_opt_takes_value(o) ? "value" : "flag", cmds,
		        o->alias_of ? o->alias_of : "-");
	}
}

/* The ditstar command's options, one entry each (see dit_cli_opt.h): the parser, the
 * --help texts, the man page and docs/usage.md's options tables are made from this
 * table alone. An option is listed in help where it is here; an alias right after the
 * option it spells. */
#include "dit_cli_opt.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dit_cli_special.h"

#define GPC     (DIT_CLI_GENERATE | DIT_CLI_PLAN | DIT_CLI_CALIBRATE)
#define RUNS    (GPC | DIT_CLI_FORWARD)
#define AT(f)   offsetof(dit_cli, f)
#define FOREVER 1e6

static const char *const priorities_names[] = {"none", "critical-path", "op-class", NULL};
static const int priorities_values[] = {DIT_PRIORITIES_NONE, DIT_PRIORITIES_CRITICAL_PATH,
                                        DIT_PRIORITIES_OP_CLASS};
static const char *const pass_order_names[] = {"chunk", "pass", NULL};
static const int pass_order_values[] = {0, 1};
static const char *const disk_source_names[] = {"auto", "checkpoint", "store", NULL};
static const int disk_source_values[] = {DIT_DISK_SOURCE_AUTO, DIT_DISK_SOURCE_CHECKPOINT,
                                         DIT_DISK_SOURCE_STORE};
static const char *const load_key_names[] = {"module", "ema", NULL};

static const dit_cli_opt common[] = {
    /* ---------------------------------------------------------------- the model */
    {.name = "model-dir",
     .arg = "DIR",
     .cmds = RUNS | DIT_CLI_INFO,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.model_dir),
     .help = "checkpoint folder or archive, or one .safetensors / .gguf file; HIGH,LOW: a "
             "two-expert model's two files (Wan2.2 A14B)",
     .more = "([checkpoints.md](checkpoints.md), [Two experts as two "
             "files](checkpoints.md#two-experts-as-two-files)). `info` also checks every "
             "tensor header of every expert"},
    {.name = "load-key",
     .arg = "KEY",
     .cmds = RUNS | DIT_CLI_INFO,
     .kind = DIT_CLI_CHOICE,
     .off = AT(gen.ck.load_key),
     .names = load_key_names,
     .want = "needs module or ema",
     .help = "a PyTorch .pt checkpoint's dict: `module` (default) or `ema`"},
    {.name = "lora",
     .arg = "FILE[:STRENGTH]",
     .cmds = RUNS,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_lora_parse,
     .want = "needs [EXPERT=]FILE[:STRENGTH]",
     .help = "merge a LoRA (safetensors: `lora_down`/`lora_up`/`alpha`, `lora_A`/`lora_B`, "
             "`diff`/`diff_b`; names of any format of the family) into the weights as "
             "they are read, times STRENGTH (default 1); repeatable, merged in order. "
             "`high=FILE`, `low=FILE`: one expert of a two-expert model",
     .more = "([LoRA](checkpoints.md#lora))"},
    {.name = "lora-ignore-unmatched",
     .cmds = RUNS,
     .kind = DIT_CLI_FLAG,
     .off = AT(gen.ck.lora_ignore_unmatched),
     .help = "skip a LoRA's keys that name no weight of the model (default: refused, "
             "listed)"},
    {.name = "model",
     .arg = "NAME",
     .cmds = GPC | DIT_CLI_INFO,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.model_name),
     .help = "built-in preset with synthetic weights (default: `tiny`); `ditstar info "
             "--list` shows them"},
    {.name = "cache-dir",
     .arg = "DIR",
     .cmds = GPC,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.cache_dir),
     .help = "where preset checkpoints are written (default: `$DITSTAR_CACHE`, "
             "`$XDG_CACHE_HOME/ditstar` or `~/.cache/ditstar`)"},
    {.name = "list",
     .cmds = DIT_CLI_INFO,
     .kind = DIT_CLI_FLAG,
     .off = AT(list),
     .help = "the built-in presets, one a line with its family and what it is"},
    {.name = "inputs",
     .arg = "FILE",
     .cmds = DIT_CLI_FORWARD,
     .kind = DIT_CLI_STRING,
     .off = AT(inputs),
     .help = "safetensors with the forward's arguments by name (see the command's "
             "description; `ditstar info` lists a model's inputs)"},
    /* ---------------------------------------------------------------- sampling */
    {.name = "frames",
     .arg = "N",
     .cmds = GPC | DIT_CLI_INFO,
     .kind = DIT_CLI_INT64,
     .off = AT(gen.frames),
     .min = 1,
     .max = 100000,
     .help = "video frames, 4k+1 (default: the preset's, else the family's)",
     .more = "The latent is `[C, (frames-1)/4+1, height/8, width/8]` (VAE strides 4, 8, 8; "
             "TI2V-5B 4, 16, 16); the family defaults are in "
             "[Families](checkpoints.md#families)"},
    {.name = "height",
     .arg = "N",
     .cmds = GPC | DIT_CLI_INFO,
     .kind = DIT_CLI_INT64,
     .off = AT(gen.height),
     .min = 1,
     .max = 1 << 20,
     .help = "video height in pixels, a multiple of the VAE stride times the patch (16; "
             "TI2V-5B 32); default: the preset's, else the family's"},
    {.name = "width",
     .arg = "N",
     .cmds = GPC | DIT_CLI_INFO,
     .kind = DIT_CLI_INT64,
     .off = AT(gen.width),
     .min = 1,
     .max = 1 << 20,
     .help = "video width in pixels, as `--height`"},
    {.name = "steps",
     .arg = "N",
     .cmds = GPC,
     .kind = DIT_CLI_INT,
     .off = AT(gen.steps),
     .min = 1,
     .max = 100000,
     .help = "sampling steps (default: the preset's, else the family's: Wan2.1 50, Wan2.2 "
             "A14B 40, TI2V-5B 50; `calibrate` 5)"},
    {.name = "solver",
     .arg = "unipc|euler",
     .cmds = GPC,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_solver_parse,
     .help = "UniPC (bh2, order 2, predictor-corrector) or Euler (default: the family's "
             "official one: Wan UniPC, HunyuanVideo Euler)"},
    {.name = "guidance",
     .arg = "G",
     .cmds = GPC,
     .kind = DIT_CLI_DOUBLE,
     .off = AT(gen.guidance),
     .lo = 0,
     .hi = FOREVER,
     .help = "classifier-free guidance scale of every expert, `v = v_uncond + G (v_cond - "
             "v_uncond)` (default: the family's: 5.0)"},
    {.name = "shift",
     .arg = "S",
     .cmds = GPC,
     .kind = DIT_CLI_DOUBLE,
     .off = AT(gen.shift),
     .lo = 0,
     .hi = FOREVER,
     .lo_open = 1,
     .help = "timestep shift `s' = S s / (1 + (S-1) s)` (default: the family's: 5.0; "
             "T2V-A14B 12.0)"},
    {.name = "seed",
     .arg = "N",
     .cmds = GPC,
     .kind = DIT_CLI_INT64,
     .off = AT(gen.seed),
     .min = 0,
     .max = INT64_MAX,
     .help = "noise seed (default 42)"},
    {.name = "noise",
     .arg = "FILE",
     .cmds = GPC,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.noise_path),
     .help = "safetensors with `noise` `[C, F, H, W]` instead of the seed's (replays a "
             "PyTorch run; the sizes, if given, must agree)",
     .more = "The latent size comes from it"},
    {.name = "context",
     .arg = "FILE",
     .cmds = GPC,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.context_path),
     .help = "safetensors with `context` `[L, text_dim]` and optionally `context_null` "
             "(default: a deterministic synthetic embedding)",
     .more = "`context` is e.g. umT5-XXL's output; `context_null` the negative prompt "
             "(absent: one zero row)"},
    /* ---------------------------------------------------------------- outputs */
    {.name = "output",
     .arg = "FILE",
     .cmds = DIT_CLI_GENERATE | DIT_CLI_FORWARD,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.output),
     .help = "write the result as F32 safetensors: `latents` `[C, F, H, W]` (forward: `y`); "
             "`-`: standard output (the run's report then goes to standard error)",
     .more = "The file also holds the run's settings as metadata"},
    {.name = "save-inputs",
     .cmds = DIT_CLI_GENERATE,
     .kind = DIT_CLI_FLAG,
     .off = AT(gen.save_inputs),
     .help = "also store `noise` and the conditioning (`context`, `context_null`; "
             "HunyuanVideo's tensors by their names) in `--output`"},
    {.name = "stats-json",
     .arg = "FILE",
     .cmds = DIT_CLI_GENERATE | DIT_CLI_FORWARD,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.stats_json),
     .help = "per-step seconds, peak memory per node, bytes per link, tasks per codelet "
             "(`-`: standard output)",
     .more = "([Statistics](#statistics---stats-json))"},
    {.name = "preview",
     .arg = "FILE.png",
     .cmds = DIT_CLI_GENERATE,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.preview_path),
     .help = "after every step, the current x0 estimate as a picture (the family's fixed "
             "latent-to-RGB map, no VAE)",
     .more = "([Preview](#preview)); the loop then runs step by step"},
    {.name = "trace",
     .arg = "DIR",
     .cmds = DIT_CLI_GENERATE | DIT_CLI_FORWARD,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.trace_dir),
     .help = "record the run: `DIR/paje.trace` (ViTE, StarVZ) and `DIR/trace.json` "
             "(Perfetto, chrome://tracing)",
     .more = "([traces.md](traces.md))"},
    {.name = "trace-steps",
     .arg = "A:B",
     .cmds = DIT_CLI_GENERATE,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.trace_steps),
     .help = "with `--trace`: record steps A to B only (from 1; `A` alone: that step)",
     .more = "From the end of step A - 1 (the start of the run for A = 1) to the end of step "
             "B: a window of a long run, whose whole trace would be gigabytes"},
    /* ---------------------------------------------------------------- workers, offload */
    {.name = "workers",
     .arg = "auto|cpu|cuda|opencl|all",
     .cmds = RUNS,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_workers_parse,
     .help = "which workers compute: `auto` (default: `cuda` when this build has CUDA and a "
             "GPU answers, else `cpu`; the report and the plan say which), `cpu`, `cuda` "
             "(the CUDA GPUs), `opencl` (the OpenCL devices, only when asked for) or `all` "
             "(the CPU cores and the GPUs, or the OpenCL devices when there is no GPU)",
     .more = "([Workers](offload.md#workers))"},
    {.name = "weight-dtype",
     .arg = "auto|bf16|f32",
     .cmds = RUNS,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_wdtype_parse,
     .help = "block GEMM weights in bf16 or f32, widened or narrowed as they are read "
             "(default `auto`: the matrices a checkpoint stores in bf16, fp16, float8 with "
             "its scale or Q8_0 kept so, the kernels widening them a tile at a time; the "
             "others bf16 when CUDA computes, else f32)",
     .more = "([Weight dtype](offload.md#weight-dtype))"},
    {.name = "act-dtype",
     .arg = "auto|bf16|f32",
     .cmds = RUNS,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_adtype_parse,
     .help = "a block's activations (normed input, q/k/v, attention output, FFN hidden) "
             "stored in bf16 or f32, computed in fp32 (default `auto`: bf16 when CUDA "
             "computes, else f32); the token stream stays f32",
     .more = "([Activations](offload.md#activations-in-bf16))"},
    {.name = "offload",
     .arg = "none|cpu|disk|auto",
     .cmds = RUNS,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_offload_parse,
     .help = "where the block weights live: `none` (on the compute node, default), `cpu` "
             "(host RAM, streamed to the device), `disk` (read from disk through host RAM: "
             "the checkpoint where it lies, else a chunk store) or `auto` (the mode, chunk size "
             "and prefetch with the least s/step "
             "the calibrated models predict; see `ditstar calibrate`)",
     .more = "([offload.md](offload.md), [`--offload auto`](#--offload-auto))"},
    {.name = "chunk",
     .arg = "[POOL=]N",
     .cmds = RUNS,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_chunk_parse,
     .want = "needs a positive integer (or one per pool: N,M, or POOL=N)",
     .help = "blocks per chunk, the unit that moves (default 1); must divide the number of "
             "blocks. `POOL=N`: the chunk size of one pool, by its name in the plan "
             "(`double_blocks`, `single_blocks`) or its expert's (`high`, `low`); given "
             "once per pool. `N,M`: one size per pool in order, the last repeating",
     .more = "([Chunks and where they live](offload.md#chunks-and-where-they-live))"},
    {.name = "offload-chunk-size", .alias_of = "chunk", .arg = "N[,M]"},
    {.name = "offload-chunk-size-double",
     .alias_of = "chunk",
     .arg = "N",
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_chunk_pool_parse,
     .want = "needs a positive integer"},
    {.name = "offload-chunk-size-single",
     .alias_of = "chunk",
     .arg = "N",
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_chunk_pool_parse,
     .want = "needs a positive integer"},
    {.name = "prefetch",
     .arg = "D",
     .cmds = RUNS,
     .kind = DIT_CLI_INT,
     .off = AT(gen.offload.prefetch),
     .min = 0,
     .max = 64,
     .help = "chunks transferred ahead of their use (default 1)",
     .more = "([Transfers are tasks](offload.md#transfers-are-tasks))"},
    {.name = "disk-ram-slots",
     .arg = "N",
     .cmds = RUNS,
     .kind = DIT_CLI_INT,
     .off = AT(gen.offload.disk_ram_slots),
     .min = 1,
     .max = 1024,
     .help = "chunks host RAM may hold in disk mode besides the resident ones (default 2)"},
    {.name = "disk-source",
     .cmds = RUNS,
     .kind = DIT_CLI_ENUM,
     .off = AT(gen.offload.disk_source),
     .names = disk_source_names,
     .values = disk_source_values,
     .help = "where `--offload disk` reads the blocks: `checkpoint`, the checkpoint's files "
             "where they lie (no chunk store written), `store`, the chunk store; default "
             "`auto`: the checkpoint for each pool whose every tensor is stored whole in a "
             "file, in its dtype (or bf16/fp16 for an fp32 slot), else the store",
     .more = "([Reading the checkpoint in place](offload.md#reading-the-checkpoint-in-place))"},
    {.name = "passes-in-flight",
     .arg = "N",
     .cmds = GPC,
     .kind = DIT_CLI_INT,
     .off = AT(gen.offload.passes_in_flight),
     .min = 0,
     .max = 64,
     .help = "guidance passes computed side by side, each with its own copy of the buffers "
             "that live inside a block (default 0: all, or as many as "
             "`--device-mem-limit`/`--host-mem-limit` hold); fewer save memory, the same "
             "latents",
     .more = "([Passes in flight](offload.md#passes-in-flight))"},
    {.name = "token-chunk",
     .arg = "N",
     .cmds = GPC,
     .kind = DIT_CLI_INT64,
     .off = AT(gen.offload.chunk_rows),
     .min = 0,
     .max = INT32_MAX,
     .want = "needs a number of tokens >= 0",
     .help =
         "Each block and the head in chunks of about N tokens (LTX-2: of its video "
         "stream; the normed input, "
         "attention output, projections and FFN hidden N rows instead of all tokens, "
         "self-attention's k/v whole, q a chunk at a time; default 0: whole, or 4096, 1024, "
         "256 when the "
         "memory budget (the limit, else the device's memory) needs it with one pass in flight)",
     .more = "Byte-identical on the CPU and OpenCL (GEMMs of a few rows may take other BLAS "
             "kernels: within 1e-5)"},
    {.name = "ffn-chunk-tokens", .alias_of = "token-chunk", .arg = "N"},
    {.name = "resident-chunks",
     .arg = "N|auto",
     .cmds = RUNS,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_resident_parse,
     .want = "needs auto or an integer >= 0",
     .help = "chunks kept on the compute node after their first transfer, the rest streamed "
             "(default `auto`: as many as its budget holds; 0: stream every chunk)",
     .more = "([Keep what fits](offload.md#keep-what-fits))"},
    {.name = "offload-dir",
     .arg = "DIR",
     .cmds = RUNS,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.offload.dir),
     .help = "chunk store for disk mode: a new or empty folder, or one ditstar made "
             "(default: under the cache dir; reused while the checkpoint is unchanged)",
     .more = "A folder with files and no `ditstar-store` marker is refused ([The chunk "
             "store](offload.md#the-chunk-store))"},
    {.name = "device-mem-limit",
     .arg = "SIZE",
     .cmds = RUNS,
     .kind = DIT_CLI_SIZE,
     .off = AT(gen.offload.device_mem_limit),
     .help = "memory StarPU may use on the device, e.g. 512M or 4G: the budget resident "
             "chunks fit in (default: the device's memory less 5% and 256 MiB)",
     .more = "([Memory limits](offload.md#memory-limits))"},
    {.name = "host-mem-limit",
     .arg = "SIZE",
     .cmds = RUNS,
     .kind = DIT_CLI_SIZE,
     .off = AT(gen.offload.host_mem_limit),
     .help = "memory StarPU may use in host RAM in disk mode, as `--device-mem-limit`"},
    {.name = "pass-order",
     .cmds = GPC,
     .kind = DIT_CLI_ENUM,
     .off = AT(gen.offload.pass_major),
     .names = pass_order_names,
     .values = pass_order_values,
     .help = "`chunk` (default): the passes of a step share each chunk's transfer; `pass`: "
             "one pass after the other, each chunk moved once per pass (the official "
             "order); the same latents either way"},
    /* ---------------------------------------------------------------- the run */
    {.name = "state",
     .arg = "FILE",
     .cmds = DIT_CLI_GENERATE,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.state_path),
     .help = "after every step, save the solver state to FILE (atomically); SIGINT/SIGTERM "
             "then stop the run after the current step",
     .more = "The state holds the latents and solver buffers (LTX-2: the video and audio "
             "samples), the next step and a fingerprint of the model, arguments and inputs; "
             "a stopped run exits with code 130, and even `kill -9` leaves the last "
             "finished step's state. The loop then runs step by step"},
    {.name = "resume",
     .arg = "FILE",
     .cmds = DIT_CLI_GENERATE,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.resume_path),
     .help = "continue a run from its state FILE (same model and arguments; byte-identical "
             "result), updating FILE",
     .more = "A state from another model or other arguments is refused, and so is one whose "
             "data, fingerprint or next step were edited or corrupted (the state carries an "
             "XXH3-64 checksum over all three)"},
    {.name = "dry-run",
     .cmds = DIT_CLI_GENERATE | DIT_CLI_PLAN,
     .kind = DIT_CLI_FLAG,
     .off = AT(gen.dry_run),
     .help = "print the offload plan instead of running (what `ditstar plan` does)",
     .more = "([`ditstar plan`](#ditstar-plan-generate---dry-run))"},
    {.name = "json",
     .cmds = DIT_CLI_GENERATE | DIT_CLI_PLAN,
     .kind = DIT_CLI_FLAG,
     .off = AT(gen.plan_json),
     .help = "the plan as one JSON object (with `--dry-run`)"},
    {.name = "rounds",
     .arg = "N",
     .cmds = DIT_CLI_CALIBRATE,
     .kind = DIT_CLI_INT,
     .off = AT(rounds),
     .min = 1,
     .max = 100,
     .help = "at most N rounds (default 12)"},
    {.name = "check-finite",
     .cmds = RUNS,
     .kind = DIT_CLI_FLAG,
     .off = AT(gen.check_finite),
     .help = "check every block's output for NaN or Inf and stop at the first, naming the "
             "block and step (runs step by step)",
     .more = "Without it, non-finite latents are still never written"},
    {.name = "watchdog",
     .arg = "SECONDS",
     .cmds = RUNS,
     .kind = DIT_CLI_DOUBLE,
     .off = AT(gen.rt.watchdog_s),
     .lo = 0,
     .hi = 1e7,
     .want = "needs seconds >= 0",
     .help = "treat a run where tasks are pending but none finishes for SECONDS as hung: "
             "report it and exit 3 (default 0: off)",
     .more = "A single block can legitimately take minutes on a CPU"},
    {.name = "tile-tokens",
     .arg = "N",
     .cmds = RUNS,
     .kind = DIT_CLI_INT64,
     .off = AT(gen.rt.tile_tokens),
     .min = 0,
     .max = INT64_MAX,
     .want = "needs an integer >= 0 (0: one task per op)",
     .help = "rows per task: each op of a forward runs as one task per tile of N tokens "
             "(attention: per query tile), so every worker computes inside one forward; 0: "
             "one task per op (default with CPU workers only: a power-of-two number of tiles "
             "of about 512 tokens; with accelerators: 0)",
     .more = "(1 170 tokens: 2 tiles of 585; 4 000: 8 of 500; [Row "
             "tiles](architecture.md#row-tiles))"},
    {.name = "sched",
     .arg = "NAME",
     .cmds = RUNS,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.rt.sched),
     .help = "StarPU scheduler (default: `$STARPU_SCHED` or `dmda`); `help`: StarPU's "
             "policies, as `ditstar sched list`",
     .more = "An unknown name is refused with their names"},
    {.name = "sim-roofline",
     .arg = "FILE",
     .cmds = DIT_CLI_GENERATE,
     .kind = DIT_CLI_SPECIAL,
     .parse = dit_cli_roofline_parse,
     .help = "ditstar-sim only: every task's length from the roofline of FILE (JSON, per "
             "kind of worker: GEMM and attention GFLOP/s, memory GB/s, task us) instead of "
             "the models",
     .more = "([traces.md](traces.md))"},
    {.name = "priorities",
     .cmds = RUNS,
     .kind = DIT_CLI_ENUM,
     .off = AT(gen.rt.priorities),
     .names = priorities_names,
     .values = priorities_values,
     .help = "the compute tasks' StarPU priorities: `none` (default but with heteroprio: "
             "every one 0), `critical-path` (each task's blocks left to the end of the "
             "run, scaled into the scheduler's range) or `op-class` (default with "
             "heteroprio: its buckets by op and worker kind, with ditstar's per-kind bucket "
             "order)",
     .more = "Latents are byte-identical whatever the scheme ([Priorities](#priorities)). "
             "Only the schedulers `ditstar sched list` marks `priorities` read them: on the "
             "others (dmda, the default, among them) a run asking for a scheme says in one "
             "line that it changes nothing"},
    {.name = "ncpus",
     .arg = "N",
     .cmds = RUNS,
     .kind = DIT_CLI_INT,
     .off = AT(gen.rt.ncpus),
     .min = 1,
     .max = 4096,
     .help = "CPU workers (default: all cores)"},
    {.name = "quiet",
     .cmds = GPC,
     .kind = DIT_CLI_FLAG,
     .off = AT(gen.quiet),
     .help = "no progress (bar or lines) and no summary"},
    {.name = "help",
     .cmds = RUNS | DIT_CLI_INFO,
     .kind = DIT_CLI_FLAG,
     .off = AT(help),
     .help = "the command's options"},
    {.name = "version",
     .cmds = RUNS | DIT_CLI_INFO,
     .kind = DIT_CLI_FLAG,
     .off = AT(version),
     .help = "ditstar's version (`ditstar VERSION`), nothing else"},
    {.name = "image-latent",
     .arg = "FILE",
     .cmds = GPC,
     .kind = DIT_CLI_STRING,
     .off = AT(gen.image_path),
     .help = "image conditioning, read by name: `y` `[in_dim - C, F, H, W]` for Wan I2V "
             "(mask, then image latent; Wan2.1's `clip_fea` may sit here too), `z` `[C, 1, "
             "H, W]` for TI2V-5B (the first frame's latent), `image_latent` `[C, 1, H, W]` "
             "for LTX-2 (a latent frame)",
     .more = "Wan's `y` holds 4 first-frame mask channels, then the image latent, as the "
             "official pipeline passes it to the model; other tensors are ignored"},
};

/* The whole table, made once by table_make. */
#define NCOMMON (sizeof common / sizeof common[0])
#define NFAMILY 64
static dit_cli_opt table[NCOMMON + NFAMILY];
static size_t table_n;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* Family option o of doc as an entry: its value is checked as the kind says (into
 * dit_cli.scratch), then given to the run's family options by name. */
static dit_cli_opt family_entry(const dit_family_doc *doc, const dit_family_opt *o)
{
	static const dit_cli_kind kinds[] = {[DIT_FOPT_DOUBLE] = DIT_CLI_DOUBLE,
	                                     [DIT_FOPT_INT] = DIT_CLI_INT64,
	                                     [DIT_FOPT_STRING] = DIT_CLI_STRING,
	                                     [DIT_FOPT_CHOICE] = DIT_CLI_CHOICE};
	int num = o->kind == DIT_FOPT_DOUBLE || o->kind == DIT_FOPT_INT;
	return (dit_cli_opt){
	    .name = o->name,
	    .arg = o->arg,
	    .cmds = (o->runs & DIT_FOPT_SAMPLING ? GPC : 0) |
	            (o->runs & DIT_FOPT_FORWARD ? DIT_CLI_FORWARD : 0),
	    .family = doc,
	    .kind = kinds[o->kind],
	    .off = num ? AT(scratch.num) : AT(scratch.str),
	    .min = (int64_t)o->lo,
	    .max = (int64_t)o->hi,
	    .lo = o->lo,
	    .hi = o->hi,
	    .lo_open = o->lo_open,
	    .names = o->names,
	    .want = o->want,
	    .help = o->help,
	    .more = o->more,
	};
}

static void table_make(void)
{
	memcpy(table, common, sizeof common);
	table_n = NCOMMON;
	for (size_t f = 0; f < dit_family_doc_count(); f++) {
		const dit_family_doc *doc = dit_family_doc_get(f);
		for (const dit_family_opt *o = doc->opts;
		     o && o->name && table_n < NCOMMON + NFAMILY; o++)
			if (!dit_cli_opt_find(o->name))
				table[table_n++] = family_entry(doc, o);
	}
}

const dit_cli_opt *dit_cli_table(size_t *n)
{
	pthread_once(&table_once, table_make);
	if (n)
		*n = table_n;
	return table;
}

const dit_cli_opt *dit_cli_opt_find(const char *name)
{
	size_t n;
	const dit_cli_opt *t = table_n ? table : dit_cli_table(&n);
	for (size_t i = 0; i < table_n; i++)
		if (strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

const dit_cli_opt *dit_cli_opt_main(const dit_cli_opt *o)
{
	const dit_cli_opt *m = o->alias_of ? dit_cli_opt_find(o->alias_of) : NULL;
	return m ? m : o;
}

const dit_cli_opt *dit_cli_opt_parser(const dit_cli_opt *o)
{
	return o->kind == DIT_CLI_SAME ? dit_cli_opt_main(o) : o;
}

int dit_cli_opt_takes_value(const dit_cli_opt *o)
{
	return dit_cli_opt_parser(o)->kind != DIT_CLI_FLAG;
}

const char *dit_cli_opt_arg(const dit_cli_opt *o, char *buf, size_t len)
{
	const dit_cli_opt *p = dit_cli_opt_parser(o);
	size_t k = 0;
	buf[0] = '\0';
	if (o->arg)
		return o->arg;
	if (p->kind != DIT_CLI_CHOICE && p->kind != DIT_CLI_ENUM)
		return p->arg ? p->arg : "";
	for (int i = 0; p->names[i] && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? "|" : "", p->names[i]);
	return buf;
}

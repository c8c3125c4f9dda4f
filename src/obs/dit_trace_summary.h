/* `ditstar trace summarize DIR` (src/obs/dit_trace_summary.c): what a `--trace DIR` run
 * did, from its tasks.rec (StarPU's per-task records: worker, start, end, step and
 * block, the tasks each depended on) and paje.trace (the transfers, with their link
 * and bytes, as trace.json draws them), both read by dit_trace_priv.h's readers:
 *
 *   makespan     from the first task's start to the last task's end
 *   per worker   busy seconds (its tasks' durations) and busy % of the makespan
 *   per step     its span (first start to last end of the step's tasks) and each
 *                worker's busy % of it
 *   transfers    their seconds, the part hidden under compute (overlapping a moment
 *                when any worker runs a task), the exposed part (transfer in flight,
 *                no task running: the union), bytes per link
 *   critical     the longest chain of dependent tasks (their durations summed along
 *                tasks.rec's DependsOn), and makespan / that length
 *
 * Times are StarPU's (milliseconds in tasks.rec and paje.trace, one origin). */
#ifndef DIT_TRACE_SUMMARY_H
#define DIT_TRACE_SUMMARY_H

#include <stdio.h>

#include "dit_error.h"

/* Prints the summary of trace folder dir, as text or (json) one JSON object. A
 * missing or unreadable tasks.rec is an error naming it; trace.json is optional (no
 * transfers then). */
dit_status dit_trace_summarize(const char *dir, int json, FILE *out, dit_error *err);

struct json_object;
/* The same summary as a JSON object (the caller puts it). */
dit_status dit_trace_summary_json(const char *dir, struct json_object **out, dit_error *err);

/* A run with both --trace and --stats-json: the stats file (already written) gets the
 * summary as "trace", and transfers.hidden_fraction becomes the trace's measure
 * (transfers.hidden_fraction_from "trace"; else it stays the bus-model estimate).
 * Rewritten atomically. */
dit_status dit_stats_add_trace(const char *stats_path, const char *dir, dit_error *err);

#endif

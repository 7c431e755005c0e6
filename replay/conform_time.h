/* conform_time.h - time per function of a sampling profiler against the
 * recording's clock (`greenreplay conform`, docs/conform.md, "Time per
 * function").
 *
 * The side channel (record --times, FILE.times 'T' entries) gives the time
 * between indexed records.  Between two records each thread runs one
 * greenlet with one stack (its shadow, rebuilt from CALL/RETURN, seeded by
 * GREENLET records), so the recording knows, for every function under the
 * root, how long it was on a running stack.  A sampler that takes its
 * samples at instants that do not depend on what runs shows function f in
 * k of its n samples, k ~ Binomial(n, p) with p the share of the time f was
 * on the running stack.  Both sides count only time (samples) where some
 * function under the root is on the stack, in the window from the first
 * CALL of such a function to its last event on the threads compared.
 */
#ifndef GR_CONFORM_TIME_H
#define GR_CONFORM_TIME_H

#include "reader.h"

#include <jansson.h>
#include <stddef.h>

/* Family-wise false-alarm rate of the test: each of m functions is tested
 * at GR_TIME_ALPHA / m (Bonferroni). */
#define GR_TIME_ALPHA 0.001

/* Compare the "stacks" of the normalised results with the time each
 * function ran on a running stack, from tm ('T' entries of trace t).
 * Differences (kinds time_share, time_unsampled, time_not_running) are
 * appended to diffs; one line describing what was compared is appended to
 * compared (or, when nothing could be, to not_compared).  Returns the
 * number of differences added. */
size_t gr_conform_time(const gr_trace *t, const gr_times *tm, json_t *results, json_t *diffs, json_t *compared,
                       json_t *not_compared);

/* Two-sided exact binomial test: the probability, under Binomial(n, p),
 * of an outcome no more likely than k. */
double gr_binom_two_sided(long long k, long long n, double p);

#endif

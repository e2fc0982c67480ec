// seqbench's report: throughput, errors and latency, as text or (--json)
// one JSON object.
#pragma once

#include "bench_sched.h"
#include "bench_subscriber.h"
#include "seqbench.h"

namespace seqd::bench {

// Prints the report of a run that took `elapsed` seconds: `total`, the
// connections' merged counts, and with --subscribe `pushes`, the
// subscribers' merged counts; `client`, seqbench's own CPU time and
// run-queue wait over the run; with --also-resp `also_resp`, the RESP
// connections' merged counts (else null).
void PrintReport(const Config& cfg, double elapsed, const Stats& total,
                 const tools::BenchSubscriber::Result& pushes, const tools::SchedTimes& client,
                 const Stats* also_resp = nullptr);

}  // namespace seqd::bench

// How long this process's threads ran, and how long they sat runnable
// waiting for a CPU (Linux: the sum of /proc/self/task/*/schedstat). A load
// generator that waits for a CPU adds that wait to the latencies it reports;
// seqbench prints both so a starved client shows. Thread-safe (reads /proc).
#pragma once

#include <filesystem>
#include <fstream>
#include <system_error>

namespace seqd::tools {

struct SchedTimes {
  bool known = false;  // false where /proc/self/task/*/schedstat is missing
  double cpu_s = 0;    // on a CPU
  double wait_s = 0;   // runnable, waiting for a CPU
};

// The process's threads alive now; a thread that has exited is not counted
// (call before joining the threads to be measured).
inline SchedTimes ProcessSchedTimes() {
  SchedTimes out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream in(task.path() / "schedstat");
    unsigned long long cpu_ns = 0, wait_ns = 0;
    if (!(in >> cpu_ns >> wait_ns)) continue;
    out.known = true;
    out.cpu_s += cpu_ns / 1e9;
    out.wait_s += wait_ns / 1e9;
  }
  return out;
}

}  // namespace seqd::tools

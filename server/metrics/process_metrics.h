// The process_* series in the names and types every Prometheus client library
// uses (the Go and Python clients' process collector), so dashboards and
// alerts written for them work on seqd:
//   process_cpu_seconds_total      counter  user + system CPU time
//   process_resident_memory_bytes  gauge    resident set size
//   process_virtual_memory_bytes   gauge    virtual memory size
//   process_open_fds               gauge    open file descriptors
//   process_max_fds                gauge    the soft RLIMIT_NOFILE
//   process_start_time_seconds     gauge    start time, Unix seconds
// Read from /proc/self and getrlimit() when collected (at scrape time):
// nothing is kept up to date on the request path. A source that cannot be
// read (not Linux, /proc not mounted) leaves its series out.
//
// Thread safety: Collect() may run on any thread, concurrently.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <optional>
#include <string_view>
#include <vector>

namespace seqd {

// The fields of /proc/<pid>/stat that the series need.
struct ProcStat {
  double cpu_seconds = 0;         // utime + stime
  double resident_bytes = 0;      // rss pages × page size
  double virtual_bytes = 0;       // vsize
  double start_after_boot_s = 0;  // starttime, seconds after boot
};

// Parses the text of /proc/<pid>/stat (see proc(5)); nullopt if it is not
// that format. The command name may hold spaces and parentheses.
// REQUIRES: ticks_per_second > 0, page_size > 0.
std::optional<ProcStat> ParseProcStat(std::string_view text, long ticks_per_second, long page_size);

// The boot time (Unix seconds) from the text of /proc/stat's "btime" line;
// nullopt if absent.
std::optional<double> ParseBootTime(std::string_view proc_stat_text);

class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace seqd

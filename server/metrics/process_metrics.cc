#include "server/metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace seqd {

namespace {

std::optional<std::string> ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Entries of /proc/self/fd, less the one opendir() itself holds.
std::optional<double> OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  double n = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;
}

prometheus::MetricFamily One(const char* name, const char* help, prometheus::MetricType type,
                             double value) {
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return prometheus::MetricFamily{name, help, type, {m}};
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view text, long ticks_per_second,
                                      long page_size) {
  // "pid (comm) state ppid ...": fields from the state on follow the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::istringstream rest{std::string(text.substr(close + 1))};
  std::vector<std::string> fields;  // fields[0] is field 3 of proc(5), the state
  for (std::string f; rest >> f;) fields.push_back(std::move(f));
  auto field = [&](size_t number, double& out) {
    if (number < 3 || number - 3 >= fields.size()) return false;
    const std::string& f = fields[number - 3];
    unsigned long long v = 0;
    auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || ptr != f.data() + f.size()) return false;
    out = static_cast<double>(v);
    return true;
  };
  double utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
  if (!field(14, utime) || !field(15, stime) || !field(22, start) || !field(23, vsize) ||
      !field(24, rss)) {
    return std::nullopt;
  }
  const double ticks = static_cast<double>(ticks_per_second);
  return ProcStat{(utime + stime) / ticks, rss * static_cast<double>(page_size), vsize,
                  start / ticks};
}

std::optional<double> ParseBootTime(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (line.starts_with("btime ")) {
      line.remove_prefix(6);
      long long v = 0;
      auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
      if (ec == std::errc() && ptr != line.data()) return static_cast<double>(v);
      return std::nullopt;
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  std::optional<ProcStat> stat;
  if (ticks > 0 && page > 0) {
    if (auto text = ReadFile("/proc/self/stat")) stat = ParseProcStat(*text, ticks, page);
  }
  if (stat) {
    out.push_back(One("process_cpu_seconds_total",
                      "Total user and system CPU time spent in seconds.", MetricType::Counter,
                      stat->cpu_seconds));
  }
  if (auto fds = OpenFds()) {
    out.push_back(
        One("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, *fds));
  }
  if (rlimit limit{}; getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    const double max = limit.rlim_cur == RLIM_INFINITY ? static_cast<double>(INT64_MAX)
                                                       : static_cast<double>(limit.rlim_cur);
    out.push_back(
        One("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge, max));
  }
  if (stat) {
    out.push_back(One("process_resident_memory_bytes", "Resident memory size in bytes.",
                      MetricType::Gauge, stat->resident_bytes));
    out.push_back(One("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                      MetricType::Gauge, stat->virtual_bytes));
    std::optional<double> boot;
    if (auto text = ReadFile("/proc/stat")) boot = ParseBootTime(*text);
    if (boot) {
      out.push_back(One("process_start_time_seconds",
                        "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                        *boot + stat->start_after_boot_s));
    }
  }
  return out;
}

}  // namespace seqd

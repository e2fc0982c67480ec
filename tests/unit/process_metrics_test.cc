// process_* series (server/metrics/process_metrics.h): the /proc parsers on
// fixed text, and the series of this test process read for real.
#include "server/metrics/process_metrics.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>

#include "server/metrics/metrics.h"

using namespace seqd;

namespace {

// name → value of the process_* samples in a /metrics text; TYPE lines as
// "TYPE name" → type.
std::map<std::string, std::string> ProcessLines(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("# TYPE process_")) {
      const size_t sp = line.rfind(' ');
      out["TYPE " + line.substr(7, sp - 7)] = line.substr(sp + 1);
    } else if (line.starts_with("process_")) {
      const size_t sp = line.find(' ');
      out[line.substr(0, sp)] = line.substr(sp + 1);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("ParseProcStat reads proc(5)'s fields past a command name with spaces and parens") {
  // Fields 1..24 of a real line, with a hostile command name.
  const std::string text =
      "4242 (seqd (a) b) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 9 0 "
      "123400 987654321 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0\n";
  auto s = ParseProcStat(text, 100, 4096);
  REQUIRE(s);
  CHECK(s->cpu_seconds == doctest::Approx(4.0));  // (250 + 150) / 100
  CHECK(s->start_after_boot_s == doctest::Approx(1234.0));
  CHECK(s->virtual_bytes == doctest::Approx(987654321.0));
  CHECK(s->resident_bytes == doctest::Approx(2048.0 * 4096));
  CHECK_FALSE(ParseProcStat("4242 seqd S 1", 100, 4096));
  CHECK_FALSE(ParseProcStat("4242 (seqd) S 1 2 3", 100, 4096));
  CHECK_FALSE(ParseProcStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 150 0 0 20 0 9 0 1 1 1", 100, 4096));
}

TEST_CASE("ParseBootTime finds btime") {
  CHECK(ParseBootTime("cpu  1 2 3\nbtime 1700000000\nprocesses 5\n") == 1700000000.0);
  CHECK_FALSE(ParseBootTime("cpu  1 2 3\n"));
}

TEST_CASE("Render has the process_* series with Prometheus's names, types and plausible values") {
  Metrics metrics("9.9.9");
  auto before = ProcessLines(metrics.Render());
  CHECK(before["TYPE process_cpu_seconds_total"] == "counter");
  for (const char* g : {"process_resident_memory_bytes", "process_virtual_memory_bytes",
                        "process_open_fds", "process_max_fds", "process_start_time_seconds"}) {
    CHECK_MESSAGE(before["TYPE " + std::string(g)] == "gauge", g);
    REQUIRE_MESSAGE(before.count(g) == 1, g);
  }
  CHECK(std::stod(before["process_cpu_seconds_total"]) >= 0);
  CHECK(std::stod(before["process_resident_memory_bytes"]) > 1 << 20);
  CHECK(std::stod(before["process_virtual_memory_bytes"]) >=
        std::stod(before["process_resident_memory_bytes"]));
  CHECK(std::stod(before["process_max_fds"]) >= std::stod(before["process_open_fds"]));
  const double start = std::stod(before["process_start_time_seconds"]);
  const double now = static_cast<double>(time(nullptr));
  CHECK(start <= now + 1);
  CHECK(start > now - 7 * 86400);  // a unit test run started within the week

  // Ten more descriptors show in process_open_fds at the next scrape.
  int pairs[5][2];
  for (auto& p : pairs) REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0);
  auto after = ProcessLines(metrics.Render());
  for (auto& p : pairs) {
    close(p[0]);
    close(p[1]);
  }
  CHECK(std::stod(after["process_open_fds"]) == std::stod(before["process_open_fds"]) + 10);
}

// Gets IDs from seqd with the blocking client API.
//   seqd-example [--endpoints HOST:PORT[,HOST:PORT...]] [KEY] [COUNT]
#include <seqd/client.h>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  seqd::client::ClientOptions options;
  std::string endpoints = "127.0.0.1:7070";
  std::string key = "order";
  uint32_t count = 3;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << "usage: seqd-example [--endpoints HOST:PORT[,HOST:PORT...]] [KEY] [COUNT]\n"
                   "Prints COUNT (default 3) IDs of KEY (default 'order') from seqd's binary\n"
                   "protocol (default endpoint 127.0.0.1:7070), one per line.\n"
                << "(seqd client library; status 0 is "
                << seqd::client::StatusCodeName(seqd::client::StatusCode::kOk) << ")\n";
      return 0;
    } else if (a == "--endpoints" && i + 1 < argc) {
      endpoints = argv[++i];
    } else if (positional == 0) {
      key = a;
      ++positional;
    } else if (positional == 1) {
      count = static_cast<uint32_t>(std::strtoul(a.c_str(), nullptr, 10));
      ++positional;
    } else {
      std::cerr << "unexpected argument " << a << "\n";
      return 2;
    }
  }
  std::stringstream ss(endpoints);
  for (std::string ep; std::getline(ss, ep, ',');) options.endpoints.push_back(ep);
  options.max_attempts = 2;
  options.backoff_initial = std::chrono::milliseconds(10);

  seqd::client::Client client(options);
  seqd::client::ClientResult<seqd::client::IdBatch> ids = client.NextIds(key, count);
  if (!ids) {
    std::cerr << "seqd-example: " << ids.ToString() << "\n";
    return 1;
  }
  for (int64_t id : ids->ids()) std::cout << id << "\n";
  return 0;
}

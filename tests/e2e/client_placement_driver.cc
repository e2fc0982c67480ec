// client_placement_driver: one seqd::client::Client (watch_placement) kept
// open while a test changes the store groups' placement, for
// tests/e2e/test_store_groups.py. Commands on stdin, one a line, each
// answered by one line on stdout:
//   next KEY   NextIds(KEY, 1): "ids FIRST placement V" or "error CODE MESSAGE"
//   version    "placement V"
// V is the client's PlacementVersion() after the call. Ends at end of stdin.
//
// Usage: client_placement_driver HOST:PORT [HOST:PORT...]
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "seqd/client.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: client_placement_driver HOST:PORT [HOST:PORT...]\n";
    return 2;
  }
  seqd::client::ClientOptions options;
  options.endpoints.assign(argv + 1, argv + argc);
  options.call_deadline = std::chrono::seconds(5);
  options.watch_placement = true;
  seqd::client::Client client(options);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command, key;
    words >> command >> key;
    if (command == "next" && !key.empty()) {
      auto r = client.NextIds(key, 1);
      if (r) {
        std::cout << "ids " << r.value().ranges.front().first << " placement "
                  << client.PlacementVersion() << std::endl;
      } else {
        std::cout << "error " << static_cast<int>(r.code()) << " " << r.message() << std::endl;
      }
    } else if (command == "version") {
      std::cout << "placement " << client.PlacementVersion() << std::endl;
    } else {
      std::cout << "error 0 unknown command" << std::endl;
    }
  }
  return 0;
}

// Prints the server's HTTP route table (HttpRoutes(), server/http/http_ops.h),
// one "METHOD /path/{template}" line per row, for ctest openapi_routes
// (check_routes.py), which compares it with docs/openapi.yaml.
#include <iostream>

#include "server/http/http_ops.h"

int main() {
  for (const seqd::HttpRoute& r : seqd::HttpRoutes()) {
    std::cout << r.method << ' ' << r.path << '\n';
  }
  return std::cout ? 0 : 1;
}

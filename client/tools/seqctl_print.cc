// How seqctl prints the server's JSON answers as readable text.
#include <algorithm>
#include <iostream>

#include "seqctl.h"
#include "tool_args.h"

namespace seqd::tools {

Json ParseJson(const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (j.is_discarded()) throw Failure{"the server's answer is not JSON: " + body};
  return j;
}

std::string Scalar(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

void PrintFlat(const Json& j, const std::string& prefix) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      PrintFlat(*it, name);
    } else {
      std::cout << name << ": " << Scalar(*it) << "\n";
    }
  }
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
}

}  // namespace seqd::tools

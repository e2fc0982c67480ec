// The hex test vectors of docs/protocol.md, read at run time so the tests
// and the spec cannot drift apart. For the codec tests.
//
// Thread safety: plain functions; use from the test thread.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <string_view>
#include <vector>
#include "tests/unit/source_dir.h"

namespace seqd::testing {

struct Vector {
  std::string comment;  // the "# ..." line above the bytes
  std::string bytes;    // decoded from hex
};

// Hex digits, spaces allowed, to bytes. Fails the test on an odd count.
inline std::string FromHex(std::string_view text) {
  std::string digits;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r') continue;
    digits.push_back(c);
  }
  REQUIRE_MESSAGE(digits.size() % 2 == 0, "odd number of hex digits: " << text);
  std::string out;
  for (size_t i = 0; i < digits.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The fenced code blocks after the heading `## <section>` of
// docs/protocol.md, one vector per hex line, each with the comment above it.
// By convention block [0] holds good vectors and [1] bad ones.
inline std::vector<std::vector<Vector>> LoadProtocolVectors(std::string_view section) {
  const std::string path = std::string(seqd::test::kSourceDir) + "/docs/protocol.md";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::vector<std::vector<Vector>> blocks;
  bool in_section = false, in_block = false;
  std::string comment, line;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_section = std::string_view(line).substr(3) == section;
      continue;
    }
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
      if (in_block) blocks.emplace_back();
      comment.clear();
      continue;
    }
    if (!in_block || line.empty()) continue;
    if (line[0] == '#') {
      comment = line.substr(1);
      continue;
    }
    blocks.back().push_back(Vector{comment, FromHex(line)});
  }
  return blocks;
}

}  // namespace seqd::testing

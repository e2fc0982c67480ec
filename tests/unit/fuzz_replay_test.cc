// Replays the committed fuzz seed corpus and every past crash through the
// fuzz target bodies, so the regressions run in every test pass, with the
// sanitizers of the build (scripts/test.sh runs ASan+UBSan and TSan builds).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/fuzz/fuzz_targets.h"
#include "tests/unit/source_dir.h"

namespace {

using Target = void (*)(const uint8_t*, size_t);

size_t Replay(const std::string& name, Target target) {
  size_t files = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    const std::filesystem::path dir =
        std::filesystem::path(seqd::test::kSourceDir) / "tests" / "fuzz" / kind / name;
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename().string().starts_with(".")) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      INFO("replaying " << entry.path().string());
      target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++files;
    }
  }
  return files;
}

}  // namespace

TEST_CASE("fuzz corpus and regressions replay cleanly") {
  CHECK(Replay("binary_decoder", seqd::fuzz::BinaryDecoder) >= 10);
  CHECK(Replay("resp_decoder", seqd::fuzz::RespDecoder) >= 5);
  CHECK(Replay("session", seqd::fuzz::BinarySession) >= 5);
  CHECK(Replay("http_request", seqd::fuzz::HttpRequest) >= 5);
  CHECK(Replay("http_json", seqd::fuzz::HttpJson) >= 5);
  CHECK(Replay("resp_session", seqd::fuzz::RespSession) >= 5);
  CHECK(Replay("config", seqd::fuzz::ConfigFile) >= 5);
  CHECK(Replay("store_url", seqd::fuzz::StoreUrl) >= 5);
  CHECK(Replay("tokens", seqd::fuzz::Tokens) >= 5);
}

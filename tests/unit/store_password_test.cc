// The MySQL password can come from SEQD_STORE_PASSWORD or a file, so it
// never needs to be on a command line; errors and help never show it.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "server/config/config.h"

namespace seqd {
namespace {

Result<Config> Load(std::vector<const char*> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "seqd");
  return LoadConfig(static_cast<int>(args.size()), args.data(), env);
}

std::string TempFile(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << content;
  return path.string();
}

}  // namespace

TEST_CASE("store password: from the environment, a file, or (discouraged) a flag") {
  auto none = Load({});
  REQUIRE(none.ok());
  CHECK(none->store_password.empty());

  auto env = Load({}, {{"SEQD_STORE_PASSWORD", "s3cret-env"}});
  REQUIRE(env.ok());
  CHECK(env->store_password == "s3cret-env");

  const std::string file = TempFile("seqd_pw_test", "s3cret-file\r\nsecond line\n");
  auto from_file = Load({"--store-password-file", file.c_str()});
  REQUIRE(from_file.ok());
  CHECK(from_file->store_password == "s3cret-file");
  auto file_env = Load({}, {{"SEQD_STORE_PASSWORD_FILE", file}});
  REQUIRE(file_env.ok());
  CHECK(file_env->store_password == "s3cret-file");

  auto flag = Load({"--store-password", "s3cret-flag"});
  REQUIRE(flag.ok());
  CHECK(flag->store_password == "s3cret-flag");

  // Both: refused, without echoing either.
  auto both =
      Load({"--store-password-file", file.c_str()}, {{"SEQD_STORE_PASSWORD", "s3cret-env"}});
  REQUIRE_FALSE(both.ok());
  CHECK(both.error().message.find("s3cret") == std::string::npos);

  auto missing = Load({"--store-password-file", "/nonexistent/seqd-pw"});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("/nonexistent/seqd-pw") != std::string::npos);

  const std::string empty = TempFile("seqd_pw_empty", "\n");
  auto blank = Load({"--store-password-file", empty.c_str()});
  REQUIRE_FALSE(blank.ok());
  CHECK(blank.error().message.find("empty") != std::string::npos);

  // --help names the environment variable and never a value.
  const std::string help = ConfigHelp();
  CHECK(help.find("SEQD_STORE_PASSWORD") != std::string::npos);
  CHECK(help.find("--store-password-file") != std::string::npos);
  std::remove(file.c_str());
  std::remove(empty.c_str());
}

}  // namespace seqd

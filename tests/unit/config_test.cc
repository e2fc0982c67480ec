#include "server/config/config.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/source_dir.h"

using namespace seqd;

namespace {
Result<Config> Load(std::vector<const char*> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "seqd");
  return LoadConfig(static_cast<int>(args.size()), args.data(), env);
}
}  // namespace

TEST_CASE("defaults match the documented ones") {
  auto c = Load({});
  REQUIRE(c);
  CHECK(c->store == "sqlite:./data/seqd.db");
  CHECK(c->http_port == 8080);
  CHECK(c->prefetch_fraction == doctest::Approx(0.1));
  CHECK(c->max_step == 1'000'000);
  CHECK(c->max_count == 10'000);
  CHECK(c->wait_deadline_ms == 1000);
  // OpenIM's conversation prefixes, every one dense.
  REQUIRE(c->auto_keys.size() == 5);
  std::vector<std::string> prefixes;
  for (const AutoKeyRule& r : c->auto_keys) {
    prefixes.push_back(r.prefix);
    CHECK(r.mode == KeyMode::kDense);
  }
  CHECK(prefixes == std::vector<std::string>{"si_", "g_", "sg_", "sn_", "n_"});
}

TEST_CASE("flags beat environment, environment beats the file") {
  const std::string path = "/tmp/seqd_config_test_" + std::to_string(::getpid()) + ".conf";
  {
    std::ofstream f(path);
    f << "# comment\nhttp_port = 7000\nmax_step = 500\n  threads=3  \n";
  }
  auto c = Load({"--config", path.c_str(), "--http-port=9000"},
                {{"SEQD_HTTP_PORT", "8000"}, {"SEQD_MAX_STEP", "600"}});
  REQUIRE(c);
  CHECK(c->http_port == 9000);
  CHECK(c->max_step == 600);
  CHECK(c->threads == 3);
  auto from_env = Load({}, {{"SEQD_CONFIG", path}});
  REQUIRE(from_env);
  CHECK(from_env->http_port == 7000);
  std::remove(path.c_str());
}

TEST_CASE("the shipped example config parses") {
  const std::string path = std::string(seqd::test::kSourceDir) + "/config/seqd.conf";
  auto c = Load({"--config", path.c_str()});
  REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
  CHECK(c->auto_keys.size() == 3);
}

TEST_CASE("bad values get an error naming the option") {
  struct Case {
    std::vector<const char*> args;
    std::map<std::string, std::string> env;
    std::string must_mention;
  };
  std::vector<Case> cases = {
      {{"--http-port", "70000"}, {}, "--http-port"},
      {{"--http-port", "abc"}, {}, "--http-port"},
      {{}, {{"SEQD_MAX_STEP", "-5"}}, "SEQD_MAX_STEP"},
      {{"--prefetch-fraction", "1.5"}, {}, "--prefetch-fraction"},
      {{"--store", "postgres://x"}, {}, "--store"},
      {{"--auto-keys", "sg_:zero"}, {}, "--auto-keys"},
      {{"--auto-keys", "bad\tprefix:5"}, {}, "--auto-keys"},
      {{"--log-level", "loud"}, {}, "--log-level"},
      {{"--no-such-flag", "1"}, {}, "--no-such-flag"},
      {{"--threads"}, {}, "--threads"},
      {{"stray"}, {}, "stray"},
  };
  for (const Case& tc : cases) {
    auto c = Load(tc.args, tc.env);
    REQUIRE_FALSE(c);
    CHECK_MESSAGE(c.error().message.find(tc.must_mention) != std::string::npos, c.error().message);
  }
  const std::string path = "/tmp/seqd_config_bad_" + std::to_string(::getpid()) + ".conf";
  {
    std::ofstream f(path);
    f << "max_count = 0\n";
  }
  auto c = Load({"--config", path.c_str()});
  REQUIRE_FALSE(c);
  CHECK(c.error().message.find(path + ":1: max_count") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("auto key rules parse and an empty list disables them") {
  auto c = Load({"--auto-keys", "conv_:7,sg_:100"});
  REQUIRE(c);
  REQUIRE(c->auto_keys.size() == 2);
  CHECK(c->auto_keys[0].prefix == "conv_");
  CHECK(c->auto_keys[0].step == 7);
  auto none = Load({"--auto-keys="});
  REQUIRE(none);
  CHECK(none->auto_keys.empty());
}

TEST_CASE("--help lists every option with its env var") {
  const std::string help = ConfigHelp();
  for (const char* s : {"--store", "SEQD_STORE", "--http-port", "--threads", "--max-step",
                        "--auto-keys", "--wait-deadline-ms", "--log-level", "default: 8080"}) {
    CHECK_MESSAGE(help.find(s) != std::string::npos, s);
  }
  auto c = Load({"--help"});
  REQUIRE(c);
  CHECK(c->show_help);
}

TEST_CASE("snowflake options: defaults, layout sum and owner length are checked") {
  auto c = Load({});
  REQUIRE(c);
  CHECK(c->snowflake);
  CHECK(c->snowflake_epoch_ms == 1288834974657);
  CHECK(c->snowflake_time_bits + c->snowflake_worker_bits + c->snowflake_sequence_bits == 63);
  CHECK(c->snowflake_max_backward_ms == 5);
  CHECK(c->snowflake_lease_ms == 30000);

  auto off = Load({"--snowflake", "off", "--snowflake-worker-bits=5"},
                  {{"SEQD_SNOWFLAKE_OWNER", "idgen-1:8080"}});
  REQUIRE(off);
  CHECK_FALSE(off->snowflake);
  CHECK(off->snowflake_worker_bits == 5);
  CHECK(off->snowflake_owner == "idgen-1:8080");

  auto bad = Load({"--snowflake", "yes"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("--snowflake: expected on or off") != std::string::npos);

  auto wide = Load({"--snowflake-time-bits", "42"});
  REQUIRE_FALSE(wide);
  CHECK(wide.error().message.find("at most 63, got 64") != std::string::npos);

  const std::string long_owner(256, 'h');
  auto owner = Load({"--snowflake-owner", long_owner.c_str()});
  REQUIRE_FALSE(owner);
  CHECK(owner.error().message.find("snowflake_owner") != std::string::npos);

  auto space = Load({"--snowflake-owner", "host a:1"});
  REQUIRE_FALSE(space);
  CHECK(space.error().message.find("printable ASCII") != std::string::npos);

  auto back = Load({"--snowflake-max-backward-ms", "2000"});
  REQUIRE_FALSE(back);
  CHECK(back.error().message.find("at most wait_deadline_ms (1000)") != std::string::npos);
  CHECK(Load({"--snowflake-max-backward-ms", "2000", "--wait-deadline-ms", "2000"}).ok());

  auto slow = Load({"--snowflake-sequence-bits", "1", "--snowflake-max-count", "4096"});
  REQUIRE_FALSE(slow);
  CHECK(slow.error().message.find("needs 2049 ms at 2 IDs per ms") != std::string::npos);

  auto lease = Load({"--snowflake-lease-ms", "10"});
  REQUIRE_FALSE(lease);
  CHECK(lease.error().message.find("--snowflake-lease-ms") != std::string::npos);
}

// seqd --print-config (server/config/config_print.cc): each value's source
// follows the documented order (flag > environment > file > default),
// secrets never show, and the output reads back as a config file.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "server/config/config.h"

using namespace seqd;

namespace {

Result<Config> Load(std::vector<const char*> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "seqd");
  return LoadConfig(static_cast<int>(args.size()), args.data(), env);
}

// name → {value, source} of PrintConfig's lines; commented-out lines too.
struct Printed {
  std::string value;
  std::string source;
};
std::map<std::string, Printed> Parse(const std::string& text) {
  std::map<std::string, Printed> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.starts_with("# ") && line.find(" = ") != std::string::npos) line = line.substr(2);
    const size_t eq = line.find(" = ");
    const size_t hash = line.rfind("  # ");
    if (line.starts_with("#") || eq == std::string::npos || hash == std::string::npos) continue;
    std::string value = line.substr(eq + 3, hash - eq - 3);
    while (!value.empty() && value.back() == ' ') value.pop_back();
    out[line.substr(0, eq)] = {value, line.substr(hash + 4)};
  }
  return out;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("seqd_config_print_test_" + name)).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("print-config names each value's source: flag, environment, file or default") {
  const std::string path =
      WriteFile("a.conf", "# comment\nhttp_port = 7000\nmax_step = 500\nthreads = 3\n");
  auto c = Load({"--print-config", "--config", path.c_str(), "--http-port=9000"},
                {{"SEQD_HTTP_PORT", "8000"}, {"SEQD_MAX_STEP", "600"}});
  REQUIRE(c);
  CHECK(c->print_config);
  auto p = Parse(PrintConfig(*c));
  CHECK(p["http_port"].value == "9000");
  CHECK(p["http_port"].source == "flag --http-port");
  CHECK(p["max_step"].value == "600");
  CHECK(p["max_step"].source == "environment SEQD_MAX_STEP");
  CHECK(p["threads"].value == "3");
  CHECK(p["threads"].source == "file " + path + ":4");
  CHECK(p["max_count"].value == "10000");
  CHECK(p["max_count"].source == "default");
  CHECK(p["config"].value == path);
  CHECK(p["config"].source == "flag --config");
  auto from_env = Load({"--print-config"}, {{"SEQD_CONFIG", path}});
  REQUIRE(from_env);
  auto q = Parse(PrintConfig(*from_env));
  CHECK(q["config"].source == "environment SEQD_CONFIG");
  CHECK(q["http_port"].source == "file " + path + ":2");
  std::remove(path.c_str());
}

TEST_CASE("print-config lists every option once") {
  auto c = Load({"--print-config"});
  REQUIRE(c);
  const std::string text = PrintConfig(*c);
  auto p = Parse(text);
  for (const char* name : {"store", "http_port", "tokens_file", "store_password", "log_level",
                           "snowflake_owner", "cluster", "auto_keys"}) {
    CHECK_MESSAGE(p.count(name) == 1, name);
  }
  CHECK(p.size() > 60);
}

TEST_CASE("print-config redacts the password of a store URL and store_password") {
  auto c = Load({"--print-config", "--store", "mysql://seqd:hunter2@db1:3306,db2:3306/seqd"},
                {{"SEQD_STORE_PASSWORD", "swordfish"}});
  REQUIRE(c);
  std::string text = PrintConfig(*c);
  CHECK(text.find("hunter2") == std::string::npos);
  CHECK(text.find("swordfish") == std::string::npos);
  auto p = Parse(text);
  CHECK(p["store"].value == "mysql://seqd:<redacted>@db1:3306,db2:3306/seqd");
  CHECK(p["store"].source == "flag --store");
  CHECK(p["store_password"].value == "<redacted>");
  CHECK(p["store_password"].source == "environment SEQD_STORE_PASSWORD");
  // Redacted lines are commented out: the output stays a loadable file.
  CHECK(text.find("\n# store = mysql://seqd:<redacted>@") != std::string::npos);

  // '@' and '/' in the password: the last '@' ends it, as the URL parser says.
  auto odd = Load({"--print-config", "--store", "mysql://u:a@b/c@db:3306/seqd"});
  REQUIRE(odd);
  text = PrintConfig(*odd);
  CHECK(text.find("a@b/c") == std::string::npos);
  CHECK(Parse(text)["store"].value == "mysql://u:<redacted>@db:3306/seqd");

  // A password read from store_password_file: its content never shows.
  const std::string pw = WriteFile("pw", "correcthorse\n");
  auto from_file = Load({"--print-config", "--store", "mysql://seqd@db:3306/seqd",
                         "--store-password-file", pw.c_str()});
  REQUIRE(from_file);
  text = PrintConfig(*from_file);
  CHECK(text.find("correcthorse") == std::string::npos);
  CHECK(Parse(text)["store_password"].value == "<redacted>");
  CHECK(Parse(text)["store_password"].source == "file " + pw);
  CHECK(Parse(text)["store"].value == "mysql://seqd@db:3306/seqd");  // no password: as is
  std::remove(pw.c_str());

  // Unset: empty, not <redacted>.
  auto none = Load({"--print-config"});
  REQUIRE(none);
  CHECK(Parse(PrintConfig(*none))["store_password"].value.empty());
}

// The lines of `text` that set `name` (commented out or not), in order.
std::vector<std::string> LinesOf(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.starts_with(name + " = ") || line.starts_with("# " + name + " = ")) {
      out.push_back(line);
    }
  }
  return out;
}

TEST_CASE("print-config prints each store group on a line of its own, its password redacted") {
  auto c = Load({"--print-config", "--cluster", "--store-group",
                 "home=mysql://seqd:hunter2@db1:3306/seqd", "--store-group",
                 "b=mysql://seqd:p@ss/w0rd@db2:3306,db3:3306/seqd", "--store-group",
                 "c=mysql://seqd@db4:3306/seqd"});
  REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
  const std::string text = PrintConfig(*c);
  CHECK(text.find("hunter2") == std::string::npos);
  CHECK(text.find("p@ss/w0rd") == std::string::npos);
  const std::vector<std::string> lines = LinesOf(text, "store_group");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].starts_with("# store_group = home=mysql://seqd:<redacted>@db1:3306/seqd "));
  CHECK(lines[1].starts_with("# store_group = b=mysql://seqd:<redacted>@db2:3306,db3:3306/seqd "));
  // No password: a line a config file can hold, as given.
  CHECK(lines[2].starts_with("store_group = c=mysql://seqd@db4:3306/seqd "));
  for (const std::string& line : lines) CHECK(line.ends_with("  # flag --store-group"));

  // None given: one empty line, as any unset option.
  auto none = Load({"--print-config"});
  REQUIRE(none);
  const std::vector<std::string> empty = LinesOf(PrintConfig(*none), "store_group");
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].starts_with("store_group =  "));

  // Read back as a config file: the same groups, in order.
  auto plain = Load({"--print-config", "--cluster", "--store-group", "home=mysql://u@db1/seqd",
                     "--store-group", "b=mysql://u@db2/seqd"});
  REQUIRE(plain);
  const std::string path = WriteFile("groups.conf", PrintConfig(*plain));
  auto again = Load({"--config", path.c_str()});
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
  CHECK(again->store_groups == plain->store_groups);
  std::remove(path.c_str());
}

TEST_CASE("print-config's output read back as a config file gives the same configuration") {
  auto c = Load({"--print-config", "--http-port", "9001", "--auto-keys", "a_:10,b_:20",
                 "--prefetch-fraction", "0.25"},
                {{"SEQD_SNOWFLAKE", "off"}, {"SEQD_LOG_LEVEL", "warn"}});
  REQUIRE(c);
  const std::string first = PrintConfig(*c);
  const std::string path = WriteFile("roundtrip.conf", first);
  auto again = Load({"--print-config", "--config", path.c_str()});
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
  auto a = Parse(first);
  auto b = Parse(PrintConfig(*again));
  for (const auto& [option, printed] : a) {
    const std::string& name = option;  // clang 14 cannot capture a binding (CHECK_MESSAGE does)
    if (name == "config") continue;
    CHECK_MESSAGE(b[name].value == printed.value, name);
  }
  CHECK(b["http_port"].value == "9001");
  CHECK(b["snowflake"].value == "off");
  CHECK(b["auto_keys"].value == "a_:10,b_:20");
  CHECK(b["http_port"].source.starts_with("file " + path + ":"));
  std::remove(path.c_str());
}

TEST_CASE("config files: a '#' after a space or tab starts a comment, elsewhere it is data") {
  const std::string path = WriteFile("comments.conf",
                                     "http_port = 7001   # the public port\n"
                                     "tls_cert = /etc/seqd/cert#2.pem\t# second one\n"
                                     "  # indented comment\n");
  auto c = Load({"--config", path.c_str()});
  REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
  CHECK(c->http_port == 7001);
  CHECK(c->tls_cert == "/etc/seqd/cert#2.pem");
  std::remove(path.c_str());
  // A value a file cannot hold is printed commented out.
  auto flag = Load({"--print-config", "--cluster-tls-ca", "/etc/ca #1.pem"});
  REQUIRE(flag);
  CHECK(PrintConfig(*flag).find("\n# cluster_tls_ca = /etc/ca #1.pem") != std::string::npos);
}

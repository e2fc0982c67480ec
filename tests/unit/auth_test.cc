// Tokens and scopes: the tokens file's parser, scope matching, digests
// compared in constant time, reloads that keep the old set on a bad file,
// and revocation seen by a principal cached before the reload.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "server/auth/authenticator.h"

namespace seqd {
namespace {

std::string Line(const std::string& id, const std::string& secret, const std::string& scopes) {
  return id + " " + DigestHex(Sha256(secret)) + " " + scopes + "\n";
}

struct TempFile {
  std::string path = "/tmp/seqd_auth_test_" + std::to_string(::getpid()) + ".tokens";
  void Write(const std::string& text) const { std::ofstream(path, std::ios::trunc) << text; }
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("auth: SHA-256 of a known input; hex round trip; fresh secrets differ") {
  // FIPS 180-2 test vector.
  CHECK(DigestHex(Sha256("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const TokenDigest d = Sha256("secret");
  REQUIRE(ParseDigestHex(DigestHex(d)).has_value());
  CHECK(*ParseDigestHex(DigestHex(d)) == d);
  std::string upper = DigestHex(d);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(*ParseDigestHex(upper) == d);
  CHECK_FALSE(ParseDigestHex(DigestHex(d).substr(1)).has_value());
  CHECK_FALSE(ParseDigestHex(std::string(64, 'g')).has_value());
  CHECK(DigestsEqual(d, Sha256("secret")));
  CHECK_FALSE(DigestsEqual(d, Sha256("secreT")));
  std::set<std::string> secrets;
  for (int i = 0; i < 100; ++i) {
    std::string s = NewTokenSecret();
    CHECK(s.size() == 4 + 43);
    CHECK(s.rfind("sqd_", 0) == 0);
    CHECK(s.find_first_not_of("sqd_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-",
                              4) == std::string::npos);
    secrets.insert(s);
  }
  CHECK(secrets.size() == 100);
}

TEST_CASE("auth: scopes parse and match by permission and key prefix") {
  auto s = ParseScopes("ids:order_,snowflake,msg:read:*,msg:send:sg_");
  REQUIRE(s.ok());
  CHECK(Allows(*s, Permission::kIds, "order_1"));
  CHECK(Allows(*s, Permission::kIds, "order_"));
  CHECK_FALSE(Allows(*s, Permission::kIds, "orde"));
  CHECK_FALSE(Allows(*s, Permission::kIds, "user_1"));
  CHECK_FALSE(Allows(*s, Permission::kIds, ""));
  CHECK(Allows(*s, Permission::kSnowflake, ""));
  CHECK(Allows(*s, Permission::kMsgRead, "anything"));
  CHECK(Allows(*s, Permission::kMsgSend, "sg_1"));
  CHECK_FALSE(Allows(*s, Permission::kMsgSend, "si_1"));
  CHECK_FALSE(Allows(*s, Permission::kMsgAdmin, "sg_1"));
  CHECK_FALSE(Allows(*s, Permission::kAdmin, ""));
  CHECK_FALSE(Allows(*s, Permission::kMetrics, ""));

  auto cluster = ParseScopes("cluster");
  REQUIRE(cluster.ok());
  CHECK(Allows(*cluster, Permission::kIds, "x"));
  CHECK(Allows(*cluster, Permission::kMsgSend, "x"));
  CHECK(Allows(*cluster, Permission::kMsgRead, "x"));
  CHECK(Allows(*cluster, Permission::kCluster, ""));
  CHECK_FALSE(Allows(*cluster, Permission::kAdmin, ""));
  CHECK_FALSE(Allows(*cluster, Permission::kMsgAdmin, "x"));
  CHECK_FALSE(Allows(*cluster, Permission::kMetrics, ""));

  // A prefix of any UTF-8 key characters (a byte above 0x7f is one, on any
  // platform's char), up to a key's 255 bytes.
  auto utf8 = ParseScopes("ids:si_张三_,msg:read:sg_Équipe");
  REQUIRE(utf8.ok());
  CHECK(Allows(*utf8, Permission::kIds, "si_张三_李四"));
  CHECK_FALSE(Allows(*utf8, Permission::kIds, "si_李四_张三"));
  CHECK(Allows(*utf8, Permission::kMsgRead, "sg_Équipe Rouge"));
  CHECK(ParseScopes("ids:" + std::string(255, 'x')).ok());
  CHECK_FALSE(ParseScopes("ids:" + std::string(256, 'x')).ok());

  for (const char* bad : {"", "ids", "ids:", "admin:x", "root", "ids:a b", "ids:a*", "msg:x:*",
                          "ids:order_,", ",admin"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseScopes(bad).ok());
  }
}

TEST_CASE("auth: the tokens file, line by line; errors name the line") {
  const std::string text = "# ops team\n\n" + Line("ops", "s1", "admin") + "  " +
                           Line("orders", "s2", "ids:order_") +
                           Line("chat", "s3", "msg:send:*,msg:read:*") + "# end\n";
  auto tokens = ParseTokens(text);
  REQUIRE(tokens.ok());
  REQUIRE(tokens->size() == 3);
  CHECK((*tokens)[1].id == "orders");
  CHECK((*tokens)[1].digest == Sha256("s2"));

  auto missing = ParseTokens("# x\n" + Line("a", "s", "admin") + "b deadbeef admin\n");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("line 3") != std::string::npos);
  CHECK_FALSE(ParseTokens(Line("a", "s", "admin") + Line("a", "t", "admin")).ok());  // id twice
  CHECK_FALSE(ParseTokens(Line("a", "s", "admin") + Line("b", "s", "admin")).ok());  // secret twice
  CHECK_FALSE(ParseTokens(Line("a b", "s", "admin")).ok());
  CHECK_FALSE(ParseTokens(Line("a/b", "s", "admin")).ok());
  CHECK_FALSE(ParseTokens(Line("a", "s", "superuser")).ok());
  CHECK_FALSE(ParseTokens("a " + DigestHex(Sha256("s")) + "\n").ok());
}

TEST_CASE("auth: authenticate by secret; reload swaps the set, a bad file keeps it") {
  TempFile f;
  f.Write(Line("ops", "s1", "admin") + Line("orders", "s2", "ids:order_"));
  auto a = Authenticator::FromFile(f.path);
  REQUIRE(a.ok());
  Authenticator& auth = **a;
  CHECK(auth.enabled());
  CHECK(auth.size() == 2);
  CHECK(auth.Anonymous() == nullptr);
  CHECK(auth.Authenticate("") == nullptr);
  CHECK(auth.Authenticate("s3") == nullptr);
  auto orders = auth.Authenticate("s2");
  REQUIRE(orders != nullptr);
  CHECK(orders->id == "orders");
  CHECK(orders->May(Permission::kIds, "order_9"));
  CHECK_FALSE(orders->May(Permission::kAdmin));

  const uint64_t g = auth.generation();
  f.Write("ops not-a-digest admin\n");
  CHECK_FALSE(auth.Reload().ok());
  CHECK(auth.generation() == g);
  CHECK(auth.Authenticate("s2") != nullptr);  // kept

  // orders loses its token, ops changes scopes.
  f.Write(Line("ops", "s1", "admin,metrics"));
  REQUIRE(auth.Reload().ok());
  CHECK(auth.generation() == g + 1);
  CHECK(auth.Current(orders) == nullptr);
  CHECK(auth.Authenticate("s2") == nullptr);
  auto ops = auth.Authenticate("s1");
  REQUIRE(ops != nullptr);
  CHECK(ops->May(Permission::kMetrics));
  CHECK(auth.Current(ops) == ops);

  CHECK_FALSE(Authenticator::FromFile("/nonexistent/seqd.tokens").ok());
  f.Write("garbage\n");
  CHECK_FALSE(Authenticator::FromFile(f.path).ok());
}

TEST_CASE("auth: the tokens file is read whole up to 4 MiB, and refused beyond") {
  TempFile f;
  // A token line straddling the reader's 16 KiB chunks, after 40 KB of comments.
  std::string comments;
  while (comments.size() < 40'000) comments += "# padding padding padding padding\n";
  f.Write(comments + Line("ops", "s1", "admin") + comments + Line("orders", "s2", "ids:o_"));
  auto a = Authenticator::FromFile(f.path);
  REQUIRE(a.ok());
  CHECK((*a)->size() == 2);
  CHECK((*a)->Authenticate("s2") != nullptr);

  std::string big;
  while (big.size() <= (4u << 20)) big += comments;
  f.Write(big + Line("ops", "s1", "admin"));
  CHECK_FALSE((*a)->Reload().ok());
  CHECK((*a)->size() == 2);  // kept
  auto refused = Authenticator::FromFile(f.path);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().message.find("over 4 MiB") != std::string::npos);
}

TEST_CASE("auth: without a tokens file everything is open") {
  Authenticator open;
  CHECK_FALSE(open.enabled());
  auto p = open.Anonymous();
  REQUIRE(p != nullptr);
  CHECK(p->open);
  CHECK(p->May(Permission::kAdmin));
  CHECK(p->May(Permission::kIds, "any"));
  CHECK(open.Authenticate("whatever") == p);
  CHECK(open.Current(p) == p);
}

}  // namespace seqd

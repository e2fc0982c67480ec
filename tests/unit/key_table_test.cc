// KeyTable (server/core/key_table.h): lookups, erasure, and short probes
// for the keys of one allocator shard.
#include "server/core/key_table.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace seqd;

namespace {

struct Item {
  std::string key;
};

}  // namespace

TEST_CASE("KeyTable: keys sharing the low bits of their hash still get short probes") {
  // The allocator picks a shard by std::hash % 64, so every key of one
  // shard's table has the same low 6 bits; the table must not use them alone.
  std::vector<std::unique_ptr<Item>> items;
  for (int i = 0; items.size() < 1500; ++i) {
    std::string k = "nk_" + std::to_string(i);
    if (std::hash<std::string_view>{}(k) % 64 == 0)
      items.push_back(std::make_unique<Item>(Item{k}));
  }
  KeyTable<Item> table;
  for (auto& it : items) table.Insert(it.get());
  REQUIRE(table.size() == 1500);
  size_t probes = 0;
  for (auto& it : items) {
    CHECK(table.Find(it->key) == it.get());
    probes += table.Probes(it->key);
  }
  CAPTURE(table.capacity());
  CHECK(static_cast<double>(probes) / 1500 < 4);  // linear probing at <= 7/8 full: ~2.5
  // Erasing keeps every other key reachable.
  for (size_t i = 0; i < items.size(); i += 2) CHECK(table.Erase(items[i]->key));
  for (size_t i = 0; i < items.size(); ++i) {
    CHECK(table.Find(items[i]->key) == (i % 2 ? items[i].get() : nullptr));
  }
  CHECK(table.size() == 750);
}

namespace {

// A key that counts how often it is compared.
struct CountedKey {
  std::string name;
  static inline size_t compares = 0;
  operator std::string_view() const { return name; }  // NOLINT: as KeyName
  friend bool operator==(const CountedKey& a, std::string_view b) {
    ++compares;
    return a.name == b;
  }
};

struct CountedItem {
  CountedKey key;
};

}  // namespace

TEST_CASE("KeyTable: a miss compares no key (the slots' hash tags differ)") {
  std::vector<std::unique_ptr<CountedItem>> items;
  KeyTable<CountedItem> table;
  // Just under 7/8 full, where a miss passes the most slots.
  for (int i = 0; i < 14000; ++i) {
    items.push_back(std::make_unique<CountedItem>(CountedItem{{"k" + std::to_string(i)}}));
    table.Insert(items.back().get());
  }
  REQUIRE(table.capacity() == 16384);
  CountedKey::compares = 0;
  for (int i = 0; i < 10000; ++i) CHECK(table.Find("absent" + std::to_string(i)) == nullptr);
  // Each miss passes ~30 slots at this load; a tag matches 1 in 65,536.
  CHECK(CountedKey::compares < 100);
  CountedKey::compares = 0;
  for (auto& it : items) CHECK(table.Find(it->key.name) == it.get());
  CHECK(CountedKey::compares < items.size() + 100);  // hits: their own key, nearly only
}

TEST_CASE("KeyTable: an address past 48 bits is refused, not truncated") {
  KeyTable<Item> table;
  auto* far = reinterpret_cast<Item*>(uintptr_t{1} << 50);
  CHECK_THROWS_AS(table.Insert(far), std::invalid_argument);
  CHECK(table.size() == 0);
}

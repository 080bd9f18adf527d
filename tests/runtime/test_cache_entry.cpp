// The disk cache entry format: round trip, and every kind of damage is
// reported as an error (never a crash or a wrong entry).
#include "ByteIO.h"
#include "CacheEntry.h"
#include "CacheKey.h"
#include "Generate.h"

#include "support/TestSupport.h"

#include "fusegen/IRPrinter.h"
#include "fusegen/Sha256.h"

#include <gtest/gtest.h>

namespace fusegen::runtime {
namespace {

using testing::kElementwiseSpec;
using testing::load_module;

CacheEntry sample_entry() {
  auto loaded = load_module(kElementwiseSpec);
  GeneratedUnit unit = generate_unit(loaded->fusion(), {{"N", 128}}, Precision::Strict, 90, &loaded->sources);
  CacheEntry entry;
  entry.key_material = "fusegen-cache-key\nschema=1\nfusion=scale_relu\n";
  entry.launch = unit.launch;
  entry.image = std::string("\x7f"
                            "ELF fake cubin\0with nul",
                            24);
  return entry;
}

// A launch plan with every part populated, so each field round-trips.
LaunchPlan full_plan() {
  LaunchPlan plan;
  plan.fusion = "f";
  plan.buffers = {
      {BufferBinding::Role::Argument, "x"}, {BufferBinding::Role::Output, "y"}, {BufferBinding::Role::Workspace, "t3"}};
  plan.dim_symbols = {"N"};
  plan.kernels = {{"fusegen_f_k0", 1, {3, 2, 1}, 256, 65536, {{2, 0x7f800000u, 1000}}},
                  {"fusegen_f_k1", 0, {5, 1, 1}, 128, 0, {}}};
  plan.workspace = {{2, 0, 4000}};
  plan.workspace_bytes = 4096;
  plan.copies = {{"z", 0, 400}};
  return plan;
}

TEST(CacheEntry, RoundTrip) {
  CacheEntry entry = sample_entry();
  ASSERT_FALSE(entry.launch.kernels.empty());
  std::string bytes = encode_entry(entry);
  EXPECT_EQ(bytes.substr(0, 8), "FUSEGENK");
  EXPECT_EQ(encode_entry(entry), bytes); // deterministic
  Result<CacheEntry> decoded = decode_entry(bytes);
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(decoded.value().key_material, entry.key_material);
  EXPECT_EQ(decoded.value().launch, entry.launch);
  EXPECT_EQ(decoded.value().image, entry.image);
  EXPECT_FALSE(decoded.value().ptx);
}

TEST(CacheEntry, RoundTripsEveryField) {
  CacheEntry entry;
  entry.key_material = "key";
  entry.launch = full_plan();
  entry.ptx = true;
  entry.image = "ptx text\0";
  Result<CacheEntry> decoded = decode_entry(encode_entry(entry));
  ASSERT_TRUE(decoded) << decoded.error();
  EXPECT_EQ(decoded.value().launch, entry.launch);
  EXPECT_TRUE(decoded.value().ptx);
}

// A workspace slot whose offset + bytes overflows int64 (a checksum-valid
// file can say anything) is refused, not added up (the cache-entry fuzzer's
// find; tests/fuzz/regressions/cache_entry).
TEST(CacheEntry, WorkspaceOffsetsThatOverflowAreRefused) {
  CacheEntry entry;
  entry.key_material = "key";
  entry.launch = full_plan();
  entry.ptx = true;
  entry.image = "ptx text";
  entry.launch.workspace = {{2, 4827858800541171712, 6989586621679013792}};
  Result<CacheEntry> decoded = decode_entry(encode_entry(entry));
  ASSERT_FALSE(decoded);
  EXPECT_NE(decoded.error().find("workspace layout is invalid"), std::string::npos) << decoded.error();
  entry.launch.workspace = {{2, 100, 4000}}; // past the end, without overflow
  EXPECT_FALSE(decode_entry(encode_entry(entry)));
  entry.launch.workspace = {{2, 96, 4000}}; // exactly up to the end
  EXPECT_TRUE(decode_entry(encode_entry(entry)));
}

TEST(CacheEntry, EveryTruncationIsAnError) {
  std::string bytes = encode_entry(sample_entry());
  for (size_t size = 0; size < bytes.size(); ++size)
    EXPECT_FALSE(decode_entry(std::string_view(bytes).substr(0, size))) << "truncated to " << size;
  EXPECT_EQ(decode_entry("").error(), "empty file");
}

TEST(CacheEntry, EveryFlippedByteIsAnError) {
  std::string bytes = encode_entry(sample_entry());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
    EXPECT_FALSE(decode_entry(damaged)) << "byte " << i << " flipped";
  }
}

TEST(CacheEntry, NamesTheProblem) {
  std::string bytes = encode_entry(sample_entry());
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_EQ(decode_entry(magic).error(), "not a fusegen cache entry (bad magic)");
  std::string schema = bytes;
  schema[8] = 1; // the format before the generator identity replaced the source hash
  EXPECT_EQ(decode_entry(schema).error(), "schema version 1 (expected " + std::to_string(kCacheSchemaVersion) + ")");
  std::string image = bytes;
  image[image.size() - 40] ^= 1;
  EXPECT_EQ(decode_entry(image).error(), "checksum mismatch (truncated or corrupted)");
  EXPECT_EQ(decode_entry(bytes + "x").error(), "checksum mismatch (truncated or corrupted)");
}

// Damage under a valid checksum (a buggy writer, not bit rot) is still caught
// by the structural checks.
TEST(CacheEntry, StructuralChecksBehindAValidChecksum) {
  auto resealed = [](std::string body) {
    Sha256 hash;
    hash.update(body);
    auto digest = hash.finish();
    return body + std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
  };
  std::string bytes = encode_entry(sample_entry());
  std::string body = bytes.substr(0, bytes.size() - 32);
  EXPECT_TRUE(decode_entry(resealed(body)));
  EXPECT_FALSE(decode_entry(resealed(body + "extra")));
  EXPECT_FALSE(decode_entry(resealed(body.substr(0, body.size() - 1))));

  CacheEntry bad = sample_entry();
  bad.launch.kernels[0].fills.push_back({31, 0, 4}); // no buffer 31
  EXPECT_FALSE(decode_entry(encode_entry(bad)));
  bad = sample_entry();
  bad.launch.kernels[0].block = 0;
  EXPECT_FALSE(decode_entry(encode_entry(bad)));
  bad = sample_entry();
  bad.image.clear();
  EXPECT_FALSE(decode_entry(encode_entry(bad)));
}

TEST(ByteIO, ReaderStopsAtTheEnd) {
  ByteWriter w;
  w.u32(7);
  w.str("abc");
  ByteReader r(w.bytes());
  uint32_t value = 0;
  std::string text;
  EXPECT_TRUE(r.u32(value));
  EXPECT_EQ(value, 7u);
  EXPECT_TRUE(r.str(text));
  EXPECT_EQ(text, "abc");
  EXPECT_TRUE(r.at_end());
  EXPECT_FALSE(r.u32(value));
  ByteReader short_string(std::string_view("\x09\x00\x00\x00"
                                           "ab",
                                           6));
  EXPECT_FALSE(short_string.str(text));
}

} // namespace
} // namespace fusegen::runtime

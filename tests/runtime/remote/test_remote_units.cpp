// The remote cache's pieces without a server: URLs, the fleet key file's
// checks, signing, and the settings taken from the environment.
#include "support/TestSupport.h"

#include "EntrySignature.h"
#include "RedisConnection.h"
#include "RemoteCacheSettings.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace fusegen {
namespace {

using testing::ScopedEnv;
using testing::TempDir;

TEST(RemoteCacheUnits, ParsesRedisUrls) {
  Result<runtime::RedisAddress> plain = runtime::parse_redis_url("redis://10.0.0.5:6380/2");
  ASSERT_TRUE(plain) << plain.error();
  EXPECT_EQ(plain.value().host, "10.0.0.5");
  EXPECT_EQ(plain.value().port, 6380);
  EXPECT_EQ(plain.value().db, 2);
  Result<runtime::RedisAddress> auth = runtime::parse_redis_url("redis://fleet:s3cret@cache.local");
  ASSERT_TRUE(auth) << auth.error();
  EXPECT_EQ(auth.value().port, 6379);
  EXPECT_EQ(auth.value().user, "fleet");
  EXPECT_EQ(auth.value().password, "s3cret");
  EXPECT_EQ(auth.value().text(), "redis://fleet:***@cache.local:6379"); // never the password
  Result<runtime::RedisAddress> v6 = runtime::parse_redis_url("redis://[::1]:7000");
  ASSERT_TRUE(v6) << v6.error();
  EXPECT_EQ(v6.value().host, "::1");
  EXPECT_EQ(v6.value().port, 7000);
  for (const char* bad :
       {"http://x:1", "redis://", "redis://host:0", "redis://host:99999", "redis://host:1/x", "redis://user@host:1"})
    EXPECT_FALSE(runtime::parse_redis_url(bad)) << bad;
}

TEST(RemoteCacheUnits, KeyFileMustBePrivateAndLongEnough) {
  TempDir dir;
  const std::string path = dir.file("key");
  testing::write_text(path, "a-fleet-key-of-32-bytes-........\n");
  ::chmod(path.c_str(), 0600);
  EXPECT_TRUE(runtime::FleetKey::load(path));
  ::chmod(path.c_str(), 0640);
  Result<runtime::FleetKey> group = runtime::FleetKey::load(path);
  ASSERT_FALSE(group);
  EXPECT_NE(group.error().find("(mode 0640); use chmod 600"), std::string::npos) << group.error();
  testing::write_text(path, "short\n");
  ::chmod(path.c_str(), 0600);
  EXPECT_FALSE(runtime::FleetKey::load(path));
  EXPECT_FALSE(runtime::FleetKey::load(dir.file("missing")));
  EXPECT_FALSE(runtime::FleetKey::load(dir.path())); // a directory
}

TEST(RemoteCacheUnits, SignatureCoversNameAndEveryByte) {
  const runtime::FleetKey key = runtime::FleetKey::from_bytes("0123456789abcdef0123456789abcdef");
  const std::string entry = "FUSEGENK some entry bytes";
  const std::string value = key.sign("name-a", entry);
  Result<std::string_view> ok = key.verify("name-a", value);
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok.value(), entry);
  EXPECT_FALSE(key.verify("name-b", value)); // replayed under another key
  for (size_t i = 0; i < value.size(); ++i) {
    std::string flipped = value;
    flipped[i] ^= 1;
    EXPECT_FALSE(key.verify("name-a", flipped)) << "byte " << i;
  }
  EXPECT_FALSE(key.verify("name-a", value.substr(0, value.size() - 1)));
  EXPECT_FALSE(key.verify("name-a", entry)); // unsigned
  EXPECT_FALSE(runtime::FleetKey::from_bytes("another key, 32 bytes long......").verify("name-a", value));
}

TEST(RemoteCacheUnits, SettingsComeFromOptionsThenEnvironment) {
  TempDir dir;
  const std::string key = dir.file("key");
  testing::write_text(key, "0123456789abcdef0123456789abcdef");
  ::chmod(key.c_str(), 0600);
  ScopedEnv url("FUSEGEN_REMOTE_CACHE", "redis://127.0.0.1:6379");
  ScopedEnv key_file("FUSEGEN_CACHE_KEY_FILE", key);
  ScopedEnv timeout("FUSEGEN_REMOTE_CACHE_TIMEOUT_MS", "40");
  ScopedEnv bad("FUSEGEN_REMOTE_CACHE_WAIT_MS", "soon");
  runtime::ResolvedRemoteCache resolved = runtime::resolve_remote_cache({});
  ASSERT_TRUE(resolved.settings) << resolved.problem;
  EXPECT_EQ(resolved.settings->timeout.count(), 40);
  EXPECT_EQ(resolved.settings->wait, runtime::kDefaultRemoteWait);
  ASSERT_EQ(resolved.notes.size(), 1u);
  EXPECT_NE(resolved.notes[0].find("FUSEGEN_REMOTE_CACHE_WAIT_MS='soon'"), std::string::npos);

  RemoteCacheOptions options;
  options.timeout_ms = 7;
  EXPECT_EQ(runtime::resolve_remote_cache(options).settings->timeout.count(), 7);
  options.url = "off";
  EXPECT_FALSE(runtime::resolve_remote_cache(options).settings);
  ScopedEnv no_key("FUSEGEN_CACHE_KEY_FILE", std::nullopt);
  runtime::ResolvedRemoteCache keyless = runtime::resolve_remote_cache({});
  EXPECT_FALSE(keyless.settings);
  EXPECT_NE(keyless.problem.find("no fleet key"), std::string::npos) << keyless.problem;
}

} // namespace
} // namespace fusegen

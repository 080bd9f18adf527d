// The disk cache with real NVRTC compilations (no GPU): entries are written
// once and reused, and every kind of damaged or foreign entry is detected,
// warned about once, deleted and rebuilt without failing the request.
#include "CacheDir.h"
#include "DiskCache.h"
#include "KernelProvider.h"

#include "support/TestSupport.h"

#include "fusegen/IRPrinter.h"
#include "fusegen/Runtime.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <functional>

namespace fusegen::runtime {
namespace {

using testing::TempDir;
using testing::WarningLog;

class DiskCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    loaded_ = testing::load_module(testing::kElementwiseSpec);
    ASSERT_TRUE(loaded_);
    ASSERT_TRUE(prepare_cache_dir(dir_.path(), true));
  }

  KernelRequest request(int64_t n = 128, int arch = 90) const {
    KernelRequest r;
    r.fusion = &loaded_->fusion();
    r.fingerprint = fingerprint(loaded_->fusion());
    r.dims = {{"N", n}};
    r.arch = arch;
    r.sources = &loaded_->sources;
    return r;
  }

  // A provider with its own warnings, as a fresh process would have.
  struct Fresh {
    WarningLog log;
    Warnings warnings;
    KernelProvider provider;
    explicit Fresh(const std::string& dir)
        : warnings(log.sink()), provider(std::make_shared<const DiskCache>(dir), warnings) {}
  };

  std::string entry_path(const ProvidedKernels& kernels) const { return dir_.file(kernels.key.file_name()); }

  // Damages the entry that `request()` uses, then checks a fresh provider
  // rebuilds it with one warning mentioning `expected_problem`.
  void expect_rebuilt(const std::function<void(const std::string& path)>& damage, const std::string& expected_problem) {
    ProvidedKernels first = Fresh(dir_.path()).provider.provide(request());
    const std::string path = entry_path(first);
    damage(path);
    Fresh fresh(dir_.path());
    ProvidedKernels again = fresh.provider.provide(request());
    EXPECT_FALSE(again.from_disk);
    EXPECT_EQ(fresh.provider.counters().compiles, 1u);
    EXPECT_EQ(fresh.provider.counters().disk_rejects, 1u);
    EXPECT_EQ(fresh.provider.counters().disk_writes, 1u);
    ASSERT_EQ(fresh.log.count(), 1u);
    EXPECT_NE(fresh.log.lines()[0].find("fusegen: warning: cache entry " + path + " is unusable"), std::string::npos)
        << fresh.log.lines()[0];
    EXPECT_NE(fresh.log.lines()[0].find(expected_problem), std::string::npos) << fresh.log.lines()[0];
    EXPECT_EQ(again.entry.image, first.entry.image);
    // The rewritten entry serves the next process.
    Fresh next(dir_.path());
    EXPECT_TRUE(next.provider.provide(request()).from_disk);
    EXPECT_EQ(next.log.count(), 0u);
  }

  TempDir dir_;
  std::unique_ptr<testing::LoadedModule> loaded_;
};

TEST_F(DiskCacheTest, CompilesOnceThenLoads) {
  Fresh first(dir_.path());
  ProvidedKernels compiled = first.provider.provide(request());
  EXPECT_FALSE(compiled.from_disk);
  EXPECT_EQ(first.provider.counters().compiles, 1u);
  EXPECT_EQ(first.provider.counters().disk_writes, 1u);
  EXPECT_EQ(compiled.key.target, "sm_90");
  EXPECT_FALSE(compiled.entry.image.empty());

  struct stat info {};
  ASSERT_EQ(stat(entry_path(compiled).c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);

  Fresh second(dir_.path());
  ProvidedKernels loaded = second.provider.provide(request());
  EXPECT_TRUE(loaded.from_disk);
  EXPECT_EQ(second.provider.counters().compiles, 0u);
  EXPECT_EQ(second.provider.counters().disk_loads, 1u);
  EXPECT_EQ(second.provider.counters().generations, 0u); // a disk hit generates nothing
  EXPECT_EQ(loaded.entry.image, compiled.entry.image);
  EXPECT_EQ(loaded.entry.launch, compiled.entry.launch);
  EXPECT_EQ(loaded.key.material(), compiled.key.material());

  // Other dims are another entry.
  EXPECT_FALSE(second.provider.provide(request(256)).from_disk);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()), {}), 2);
}

TEST_F(DiskCacheTest, TruncatedEntry) {
  expect_rebuilt([](const std::string& path) { std::filesystem::resize_file(path, 100); }, "truncated");
}

TEST_F(DiskCacheTest, FlippedByteInCubin) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string bytes = testing::read_text(path);
        bytes[bytes.size() - 100] ^= 0x01; // inside the image, before the checksum
        testing::write_text(path, bytes);
      },
      "checksum mismatch");
}

TEST_F(DiskCacheTest, FlippedByteInHeader) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string bytes = testing::read_text(path);
        bytes[40] ^= 0x20; // inside the key
        testing::write_text(path, bytes);
      },
      "checksum mismatch");
}

TEST_F(DiskCacheTest, BadMagic) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string bytes = testing::read_text(path);
        bytes[0] = 'X';
        testing::write_text(path, bytes);
      },
      "bad magic");
}

TEST_F(DiskCacheTest, ZeroLengthEntry) {
  expect_rebuilt([](const std::string& path) { testing::write_text(path, ""); }, "empty file");
}

TEST_F(DiskCacheTest, DirectoryInPlaceOfTheEntry) {
  expect_rebuilt(
      [](const std::string& path) {
        std::filesystem::remove(path);
        std::filesystem::create_directories(path + "/inside");
      },
      "a directory is in its place");
}

// A link in the entry's place is not followed (reading or deleting): what
// it points to is left alone.
TEST_F(DiskCacheTest, SymlinkInPlaceOfTheEntry) {
  TempDir elsewhere;
  const std::string target = elsewhere.file("precious");
  expect_rebuilt(
      [&](const std::string& path) {
        std::filesystem::copy_file(path, target);
        std::filesystem::remove(path);
        std::filesystem::create_symlink(target, path);
      },
      "not a regular file");
  EXPECT_TRUE(std::filesystem::is_regular_file(target));
  EXPECT_TRUE(decode_entry(testing::read_text(target)));
}

// A valid entry for another key under this key's name (e.g. renamed by
// hand): the key stored inside is compared, not just the name.
void put_foreign_entry(const std::string& dir, const KernelRequest& foreign_request, const std::string& target_path) {
  WarningLog log;
  Warnings warnings(log.sink());
  TempDir other;
  KernelProvider provider(std::make_shared<const DiskCache>(other.path()), warnings);
  ProvidedKernels foreign = provider.provide(foreign_request);
  std::filesystem::copy_file(other.file(foreign.key.file_name()), target_path,
                             std::filesystem::copy_options::overwrite_existing);
  (void)dir;
}

TEST_F(DiskCacheTest, EntryOfAnotherArch) {
  expect_rebuilt([&](const std::string& path) { put_foreign_entry(dir_.path(), request(128, 80), path); },
                 "arch=sm_80 (expected arch=sm_90)");
}

TEST_F(DiskCacheTest, EntryOfAnotherVersion) {
  expect_rebuilt(
      [&](const std::string& path) {
        // Rewrite the entry as fusegen 0.0.1 would have: same layout, other key.
        Result<CacheEntry> entry = decode_entry(testing::read_text(path));
        ASSERT_TRUE(entry);
        std::string& key = entry.value().key_material;
        key.replace(key.find("fusegen=" FUSEGEN_VERSION), std::string("fusegen=" FUSEGEN_VERSION).size(),
                    "fusegen=0.0.1");
        testing::write_text(path, encode_entry(entry.value()));
      },
      "fusegen=0.0.1 (expected fusegen=" FUSEGEN_VERSION ")");
}

// Entries of a build with other generator code or templates: the key names
// the generator's build identity, since a disk hit does not generate.
TEST_F(DiskCacheTest, EntryOfAnotherGenerator) {
  const std::string ours = std::string("generator=") + generator_identity();
  const std::string theirs = "generator=" + std::string(64, '0');
  expect_rebuilt(
      [&](const std::string& path) {
        Result<CacheEntry> entry = decode_entry(testing::read_text(path));
        ASSERT_TRUE(entry);
        std::string& key = entry.value().key_material;
        ASSERT_NE(key.find(ours), std::string::npos) << key;
        key.replace(key.find(ours), ours.size(), theirs);
        testing::write_text(path, encode_entry(entry.value()));
      },
      theirs + " (expected " + ours + ")");
}

// A checksummed entry whose stored launch plan is for another fusion.
TEST_F(DiskCacheTest, LaunchPlanOfAnotherFusion) {
  expect_rebuilt(
      [](const std::string& path) {
        Result<CacheEntry> entry = decode_entry(testing::read_text(path));
        ASSERT_TRUE(entry);
        entry.value().launch.fusion = "another_fusion";
        testing::write_text(path, encode_entry(entry.value()));
      },
      "its launch plan is for fusion 'another_fusion'");
}

TEST_F(DiskCacheTest, EntryOfAnotherSchema) {
  expect_rebuilt(
      [](const std::string& path) {
        std::string bytes = testing::read_text(path);
        bytes[8] = 9; // the schema version follows the 8-byte magic
        testing::write_text(path, bytes);
      },
      "schema version 9 (expected " + std::to_string(kCacheSchemaVersion) + ")");
}

TEST_F(DiskCacheTest, UnwritableCacheIsAWarningNotAFailure) {
  Fresh fresh(dir_.path());
  std::filesystem::remove_all(dir_.path()); // the directory vanished
  ProvidedKernels kernels = fresh.provider.provide(request());
  EXPECT_FALSE(kernels.from_disk);
  EXPECT_FALSE(kernels.entry.image.empty());
  ASSERT_EQ(fresh.log.count(), 1u);
  EXPECT_NE(fresh.log.lines()[0].find("cannot"), std::string::npos) << fresh.log.lines()[0];
  std::filesystem::create_directories(dir_.path());
}

TEST_F(DiskCacheTest, ConcurrentWritersLeaveOneValidEntry) {
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Fresh>> providers;
  for (int i = 0; i < 4; ++i)
    providers.push_back(std::make_unique<Fresh>(dir_.path()));
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { providers[static_cast<size_t>(i)]->provider.provide(request(), false); });
  for (std::thread& t : threads)
    t.join();
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
    ++files;
    EXPECT_EQ(entry.path().extension(), ".fgc") << "left over: " << entry.path();
  }
  EXPECT_EQ(files, 1u);
  EXPECT_TRUE(Fresh(dir_.path()).provider.provide(request()).from_disk);
}

TEST(CacheDir, CreatesPrivateDirectories) {
  TempDir root;
  std::string dir = root.file("a/b/fusegen");
  ASSERT_TRUE(prepare_cache_dir(dir, true));
  for (const std::string& path : {root.file("a"), root.file("a/b"), dir}) {
    struct stat info {};
    ASSERT_EQ(stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u) << path;
  }
  EXPECT_FALSE(prepare_cache_dir(root.file("missing"), false));
}

TEST(CacheDir, RefusesSharedOrOddDirectories) {
  TempDir root;
  std::string group = root.file("group");
  std::filesystem::create_directory(group);
  chmod(group.c_str(), 0770);
  Status g = prepare_cache_dir(group, true);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().find("writable by its group (mode 0770)"), std::string::npos) << g.error();

  std::string world = root.file("world");
  std::filesystem::create_directory(world);
  chmod(world.c_str(), 01777);
  Status w = prepare_cache_dir(world, true);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().find("writable by everyone"), std::string::npos) << w.error();

  std::string file = root.file("file");
  testing::write_text(file, "x");
  Status f = prepare_cache_dir(file, true);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().find("is not a directory"), std::string::npos) << f.error();

  if (geteuid() == 0) {
    // Owned by someone else (only root can arrange that here).
    std::string foreign = root.file("foreign");
    std::filesystem::create_directory(foreign);
    chmod(foreign.c_str(), 0700);
    ASSERT_EQ(chown(foreign.c_str(), 12345, 12345), 0);
    Status o = prepare_cache_dir(foreign, true);
    ASSERT_FALSE(o);
    EXPECT_NE(o.error().find("is owned by uid 12345"), std::string::npos) << o.error();
  }
}

// The Runtime does not use an unsafe directory: one warning, memory only.
// (Construction needs no driver.)
TEST(CacheDir, RuntimeFallsBackToMemoryWithOneWarning) {
  TempDir root;
  std::string shared = root.file("shared");
  std::filesystem::create_directory(shared);
  chmod(shared.c_str(), 0777);
  WarningLog log;
  RuntimeOptions options;
  options.cache_dir = shared;
  options.warning_sink = log.sink();
  Runtime rt(0, options);
  EXPECT_EQ(rt.cache_dir(), "");
  ASSERT_EQ(log.count(), 1u);
  EXPECT_NE(log.lines()[0].find("fusegen: warning: not using the kernel cache directory"), std::string::npos);
  EXPECT_NE(log.lines()[0].find("writable by everyone"), std::string::npos) << log.lines()[0];

  RuntimeOptions good;
  good.cache_dir = root.file("good");
  Runtime rt2(0, good);
  EXPECT_EQ(rt2.cache_dir(), root.file("good"));
  RuntimeOptions off = good;
  off.disk_cache = false;
  EXPECT_EQ(Runtime(0, off).cache_dir(), "");
}

TEST(CacheDir, LocationFromTheEnvironment) {
  using testing::ScopedEnv;
  ScopedEnv no_switch("FUSEGEN_CACHE", std::nullopt);
  {
    ScopedEnv dir("FUSEGEN_CACHE_DIR", "/x/fg");
    ScopedEnv xdg("XDG_CACHE_HOME", "/y");
    EXPECT_EQ(cache_location().dir, "/x/fg");
    EXPECT_EQ(cache_location("/explicit").dir, "/explicit");
  }
  {
    ScopedEnv dir("FUSEGEN_CACHE_DIR", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", "/y");
    EXPECT_EQ(cache_location().dir, "/y/fusegen");
  }
  {
    ScopedEnv dir("FUSEGEN_CACHE_DIR", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(cache_location().dir, "/home/u/.cache/fusegen");
  }
  {
    ScopedEnv dir("FUSEGEN_CACHE_DIR", std::nullopt);
    ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
    ScopedEnv home("HOME", std::nullopt);
    EXPECT_FALSE(cache_location().enabled);
  }
  {
    ScopedEnv off("FUSEGEN_CACHE", "0");
    CacheLocation where = cache_location("/explicit");
    EXPECT_FALSE(where.enabled);
    EXPECT_EQ(where.reason, "turned off by FUSEGEN_CACHE=0");
    TempDir root;
    RuntimeOptions options;
    options.cache_dir = root.path();
    EXPECT_EQ(Runtime(0, options).cache_dir(), "");
  }
}

} // namespace
} // namespace fusegen::runtime

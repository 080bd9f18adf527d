// fusegen_cache_client: one process of the disk-cache load tests
// (test_cache_load.cpp). It asks a KernelProvider, as the JIT runtime does,
// for the kernels of the small elementwise test fusion at several values of
// N, for some rounds, against one cache directory, and prints
//
//   cache_client: compiled=C loaded=L rejects=R warnings=W
//
// with every warning on stderr. Exits 0 when every request was served and
// every image it saw for a key was the same; 1 on an error, 2 on bad usage.
// With --rewrite K every K-th request ignores the disk and compiles and
// stores again, so that processes replace entries others are reading.
// Tests start it under a read-only directory or a file size limit to check
// that compiling still works with exactly one warning.
//
// With --remote URL --key-file K it uses the fleet's remote cache as the
// runtime does (timeouts and bounds from the environment), for the remote
// cache tests (remote/test_remote_cache.cpp), and the counter line adds
//
//   remote: loads=L writes=W rejects=R waits=Q
//
// and, for each N, "image N=<n> <sha256 of the image>".
#include "CacheDir.h"
#include "DiskCache.h"
#include "KernelProvider.h"
#include "RemoteCache.h"

#include "support/TestSupport.h"

#include "fusegen/Frontend.h"
#include "fusegen/IRPrinter.h"
#include "fusegen/Runtime.h"
#include "fusegen/Sha256.h"

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace fusegen;

struct Options {
  std::string dir;
  std::vector<int64_t> dims;
  int rounds = 1;
  int rewrite = 0; // every K-th request recompiles (0: never)
  int seed = 0;    // rotates the order of the dims
  std::string remote;   // the remote cache's URL
  std::string key_file; // its fleet key
};

bool parse_int(const std::string& text, int64_t& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    int64_t number = 0;
    if (flag == "--dir") {
      options.dir = value;
    } else if (flag == "--remote") {
      options.remote = value;
    } else if (flag == "--key-file") {
      options.key_file = value;
    } else if (flag == "--dims") {
      std::stringstream items(value);
      std::string item;
      while (std::getline(items, item, ','))
        if (!parse_int(item, number) || number <= 0)
          return false;
        else
          options.dims.push_back(number);
    } else if (parse_int(value, number) && number >= 0 && number < 1000) {
      if (flag == "--rounds")
        options.rounds = static_cast<int>(number);
      else if (flag == "--rewrite")
        options.rewrite = static_cast<int>(number);
      else if (flag == "--seed")
        options.seed = static_cast<int>(number);
      else
        return false;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !options.dir.empty() && !options.dims.empty();
}

int run(const Options& options) {
  SourceManager sources;
  uint32_t file = sources.add_buffer("act.fg", testing::kElementwiseSpec);
  Diagnostics diags;
  std::optional<Module> module = compile_spec(sources, file, diags);
  if (!module) {
    std::fprintf(stderr, "%s\n", diags.render(sources).c_str());
    return 1;
  }
  const Fusion& fusion = module->fusions.at(0);

  // As the Runtime does: an unusable directory means no disk cache.
  std::atomic<int> warnings_seen{0};
  runtime::Warnings warnings([&](const std::string& line) {
    ++warnings_seen;
    std::fprintf(stderr, "%s\n", line.c_str());
  });
  std::shared_ptr<const runtime::DiskCache> disk;
  if (Status usable = runtime::prepare_cache_dir(options.dir, true); usable)
    disk = std::make_shared<const runtime::DiskCache>(options.dir);
  else
    warnings.warn("not using the kernel cache directory: " + usable.error());
  std::shared_ptr<runtime::RemoteCache> remote;
  if (!options.remote.empty()) {
    RemoteCacheOptions remote_options;
    remote_options.url = options.remote;
    remote_options.key_file = options.key_file;
    remote = runtime::open_remote_cache(remote_options, warnings);
  }
  runtime::KernelProvider provider(disk, warnings, remote);

  std::map<int64_t, std::string> image_hash; // the first image seen per N
  int request_count = 0;
  const size_t count = options.dims.size();
  for (int round = 0; round < options.rounds; ++round)
    for (size_t i = 0; i < count; ++i) {
      int64_t n = options.dims[(i + static_cast<size_t>(options.seed + round)) % count];
      runtime::KernelRequest request;
      request.fusion = &fusion;
      request.fingerprint = fingerprint(fusion);
      request.dims = {{"N", n}};
      request.arch = 90;
      request.sources = &sources;
      bool read_disk = options.rewrite == 0 || ++request_count % options.rewrite != 0;
      try {
        runtime::ProvidedKernels kernels = provider.provide(request, read_disk);
        std::string hash = sha256_hex(kernels.entry.image);
        auto [it, first] = image_hash.emplace(n, hash);
        if (!first && it->second != hash) {
          std::fprintf(stderr, "cache_client: N=%lld: the image differs from the one seen before\n",
                       static_cast<long long>(n));
          return 1;
        }
      } catch (const std::exception& error) {
        std::fprintf(stderr, "cache_client: N=%lld: %s\n", static_cast<long long>(n), error.what());
        return 1;
      }
    }
  const runtime::ProviderCounters& c = provider.counters();
  std::printf("cache_client: compiled=%llu loaded=%llu rejects=%llu warnings=%d\n",
              static_cast<unsigned long long>(c.compiles.load()), static_cast<unsigned long long>(c.disk_loads.load()),
              static_cast<unsigned long long>(c.disk_rejects.load()), warnings_seen.load());
  if (remote) {
    std::printf("remote: loads=%llu writes=%llu rejects=%llu waits=%llu\n",
                static_cast<unsigned long long>(c.remote_loads.load()),
                static_cast<unsigned long long>(c.remote_writes.load()),
                static_cast<unsigned long long>(c.remote_rejects.load()),
                static_cast<unsigned long long>(c.remote_waits.load()));
    for (const auto& [n, hash] : image_hash)
      std::printf("image N=%lld %s\n", static_cast<long long>(n), hash.c_str());
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) {
    std::fprintf(stderr, "usage: fusegen_cache_client --dir DIR --dims N1,N2,... [--rounds R] [--rewrite K] "
                         "[--seed S] [--remote URL --key-file K]\n");
    return 2;
  }
  return run(options);
}

#include "KernelProvider.h"

#include "Nvrtc.h"
#include "SingleFlight.h"

#include "fusegen/Runtime.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fusegen::runtime {
namespace {

// Where a failed compilation's source is written for the user to inspect:
// named by content, so reruns reuse one file.
std::string failed_source_path(const GeneratedUnit& unit) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec)
    dir = "/tmp";
  return (dir / ("fusegen-" + unit.launch.fusion + "-" + unit.source_sha256.substr(0, 12) + ".cu")).string();
}

// The temporary file is made with mkostemp (O_EXCL, mode 0600): in a shared
// temporary directory a predictable name could be a link planted by another
// user, through which a plain open would overwrite a file of ours.
bool write_text(const std::string& path, const std::string& text) {
  std::string pattern = path + ".part-XXXXXX";
  std::vector<char> temp(pattern.begin(), pattern.end());
  temp.push_back('\0');
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0)
    return false;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  bool ok = ::close(fd) == 0 && done == text.size() && ::rename(temp.data(), path.c_str()) == 0;
  if (!ok)
    ::unlink(temp.data());
  return ok;
}

[[noreturn]] void throw_nvrtc_failure(const GeneratedUnit& unit, const CacheKey& key, const std::string& program,
                                      const std::string& error) {
  bool saved = write_text(program, unit.source);
  std::string message = "NVRTC " + key.nvrtc_version + " failed to compile fusion '" + unit.launch.fusion + "' at " +
                        dims_text(key.dims) + " for " + key.target + ":\n" + error + "\n";
  message += saved ? "generated source: " + program + "\n" + first_error_line(error, unit.source)
                   : "(could not write the generated source to " + program + ")\n";
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  throw RuntimeError(ErrorKind::Compile, message);
}

} // namespace

KernelProvider::KernelProvider(std::shared_ptr<const DiskCache> disk, Warnings& warnings,
                               std::shared_ptr<RemoteCache> remote)
    : disk_(std::move(disk)), remote_(std::move(remote)), warnings_(warnings) {}

namespace {

NvrtcTarget target_for(const KernelRequest& request) {
  Result<NvrtcTarget> target = choose_target(request.arch, nvrtc_info());
  if (!target)
    throw RuntimeError(ErrorKind::Compile, target.error());
  return target.value();
}

} // namespace

Target generation_target(const KernelRequest& request) {
  Result<Target> target = target_for_arch(target_for(request).arch);
  if (!target)
    throw RuntimeError(ErrorKind::Compile, target.error());
  return target.value();
}

CacheKey KernelProvider::key_of(const KernelRequest& request, const NvrtcTarget& target) const {
  CacheKey key;
  key.fusegen_version = FUSEGEN_VERSION;
  key.generator = generator_identity();
  key.nvrtc_version = nvrtc_info().version();
  key.nvrtc_options = nvrtc_options(target, request.precision);
  key.arch = request.arch;
  key.target = target_name(target);
  key.fusion = request.fusion->name;
  key.fingerprint = request.fingerprint;
  key.dims = request.dims;
  key.precision = request.precision;
  key.autotuned = request.autotuned;
  key.strict_product = request.strict_product;
  return key;
}

ProvidedKernels KernelProvider::provide(const KernelRequest& request, bool read_disk) {
  if (!read_disk || !remote_) {
    if (read_disk)
      if (std::optional<ProvidedKernels> hit = lookup(request))
        return std::move(*hit);
    return compile(request, /*store_on_disk=*/true);
  }
  CacheKey key = key_of(request, target_for(request));
  if (std::optional<ProvidedKernels> hit = lookup_disk(request, key))
    return std::move(*hit);
  FleetAnswer answer = fetch_or_claim(*remote_, key);
  if (answer.waited)
    ++counters_.remote_waits;
  if (!answer.problem.empty())
    warn_remote_reject(key, answer.problem);
  if (answer.entry)
    return take_remote(request, std::move(key), std::move(*answer.entry));
  // Released after the entry is published (compile stores it), or when the
  // compile throws.
  LeaseRelease lease(remote_.get(), key, std::move(answer.token));
  return compile(request, /*store_on_disk=*/true);
}

std::optional<ProvidedKernels> KernelProvider::lookup(const KernelRequest& request) {
  if (!disk_ && !remote_)
    return std::nullopt;
  CacheKey key = key_of(request, target_for(request));
  if (std::optional<ProvidedKernels> hit = lookup_disk(request, key))
    return hit;
  if (!remote_)
    return std::nullopt;
  RemoteCache::Fetched fetched = remote_->fetch(key);
  if (fetched.status == RemoteCache::Lookup::Hit)
    return take_remote(request, std::move(key), std::move(fetched.entry));
  if (fetched.status == RemoteCache::Lookup::Bad)
    warn_remote_reject(key, fetched.problem);
  return std::nullopt;
}

std::optional<ProvidedKernels> KernelProvider::lookup_disk(const KernelRequest& request, const CacheKey& key) {
  if (!disk_)
    return std::nullopt;
  DiskCache::Loaded loaded = disk_->load(key);
  if (loaded.status == DiskCache::Lookup::Hit) {
    // Only the specialization (for the argument and output shapes); the
    // stored launch plan is used as it is.
    ProvidedKernels out;
    out.concrete = specialize_or_throw(*request.fusion, request.dims, request.sources);
    out.concrete.precision = request.precision;
    ++counters_.disk_loads;
    out.key = key;
    out.entry = std::move(loaded.entry);
    out.from_disk = true;
    return out;
  }
  if (loaded.status == DiskCache::Lookup::Bad) {
    ++counters_.disk_rejects;
    warnings_.warn("cache entry " + disk_->path(key.file_name()) + " is unusable (" + loaded.problem +
                   "); deleted it, recompiling");
    disk_->remove(key.file_name());
  }
  return std::nullopt;
}

ProvidedKernels KernelProvider::take_remote(const KernelRequest& request, CacheKey key, CacheEntry entry) {
  ProvidedKernels out;
  out.concrete = specialize_or_throw(*request.fusion, request.dims, request.sources);
  out.concrete.precision = request.precision;
  ++counters_.remote_loads;
  out.key = std::move(key);
  out.entry = std::move(entry);
  out.from_disk = true;
  out.from_remote = true;
  if (disk_) {
    if (Status stored = disk_->store(out.key, out.entry); stored) {
      ++counters_.disk_writes;
    } else {
      out.store_error = stored.error();
      warnings_.warn(stored.error() + " (continuing without it)");
    }
  }
  return out;
}

void KernelProvider::warn_remote_reject(const CacheKey& key, const std::string& problem) {
  ++counters_.remote_rejects;
  warnings_.warn("remote cache entry " + std::string(kRemoteEntryPrefix) + RemoteCache::name_of(key) + " (fusion '" +
                 key.fusion + "' at " + dims_text(key.dims) + ") is unusable (" + problem +
                 "); not loaded, compiling locally");
}

ProvidedKernels KernelProvider::compile(const KernelRequest& request, bool store_on_disk) {
  return compile(request, generate(request), store_on_disk);
}

GeneratedUnit KernelProvider::generate(const KernelRequest& request) {
  const NvrtcTarget target = target_for(request);
  GeneratedUnit unit = generate_unit(*request.fusion, request.dims, request.precision, target.arch, request.sources,
                                     request.gemm_block, request.strict_product);
  ++counters_.generations;
  return unit;
}

ProvidedKernels KernelProvider::compile(const KernelRequest& request, GeneratedUnit unit, bool store_on_disk) {
  const NvrtcTarget target = target_for(request);
  ProvidedKernels out;
  out.key = key_of(request, target);
  const std::string program = failed_source_path(unit);
  Result<std::string> image = nvrtc_compile(unit.source, program, out.key.nvrtc_options, !target.cubin);
  ++counters_.compiles;
  if (!image)
    throw_nvrtc_failure(unit, out.key, program, image.error());
  out.concrete = std::move(unit.concrete);
  out.entry.key_material = out.key.material();
  out.entry.launch = std::move(unit.launch);
  out.variants = std::move(unit.variants);
  out.entry.ptx = !target.cubin;
  out.entry.image = std::move(image.value());
  if (store_on_disk)
    store(request, out);
  return out;
}

void KernelProvider::store(const KernelRequest& request, ProvidedKernels& kernels) {
  kernels.key = key_of(request, target_for(request));
  kernels.entry.key_material = kernels.key.material();
  publish(kernels);
  if (!disk_)
    return;
  if (Status stored = disk_->store(kernels.key, kernels.entry); stored) {
    ++counters_.disk_writes;
    kernels.store_error.clear();
  } else {
    kernels.store_error = stored.error();
    warnings_.warn(stored.error() + " (continuing without it)");
  }
}

void KernelProvider::publish(ProvidedKernels& kernels) {
  if (remote_ && remote_->publish(kernels.key, kernels.entry)) {
    ++counters_.remote_writes;
    kernels.published = true;
  }
}

void KernelProvider::share(ProvidedKernels& kernels) {
  if (remote_ && !kernels.from_remote && !remote_->contains(kernels.key))
    publish(kernels);
}

void KernelProvider::reject(const ProvidedKernels& kernels, const std::string& problem) {
  if (!disk_)
    return;
  ++counters_.disk_rejects;
  warnings_.warn("cache entry " + disk_->path(kernels.key.file_name()) + " is unusable (" + problem +
                 "); deleted it, recompiling");
  disk_->remove(kernels.key.file_name());
}

} // namespace fusegen::runtime

#include "KernelProvider.h"

#include "Nvrtc.h"

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

KernelProvider::KernelProvider(std::shared_ptr<const DiskCache> disk, Warnings& warnings)
    : disk_(std::move(disk)), warnings_(warnings) {}

namespace {

NvrtcTarget target_for(const KernelRequest& request) {
  Result<NvrtcTarget> target = choose_target(request.arch, nvrtc_info());
  if (!target)
    throw RuntimeError(ErrorKind::Compile, target.error());
  return target.value();
}

} // namespace

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
  return key;
}

ProvidedKernels KernelProvider::provide(const KernelRequest& request, bool read_disk) {
  if (read_disk)
    if (std::optional<ProvidedKernels> hit = lookup(request))
      return std::move(*hit);
  return compile(request, /*store_on_disk=*/true);
}

std::optional<ProvidedKernels> KernelProvider::lookup(const KernelRequest& request) {
  if (!disk_)
    return std::nullopt;
  CacheKey key = key_of(request, target_for(request));
  DiskCache::Loaded loaded = disk_->load(key);
  if (loaded.status == DiskCache::Lookup::Hit) {
    // Only the specialization (for the argument and output shapes); the
    // stored launch plan is used as it is.
    ProvidedKernels out;
    out.concrete = specialize_or_throw(*request.fusion, request.dims, request.sources);
    out.concrete.precision = request.precision;
    ++counters_.disk_loads;
    out.key = std::move(key);
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

ProvidedKernels KernelProvider::compile(const KernelRequest& request, bool store_on_disk) {
  const NvrtcTarget target = target_for(request);
  ProvidedKernels out;
  out.key = key_of(request, target);
  GeneratedUnit unit = generate_unit(*request.fusion, request.dims, request.precision, target.arch, request.sources,
                                     request.gemm_block);
  ++counters_.generations;
  const std::string program = failed_source_path(unit);
  Result<std::string> image = nvrtc_compile(unit.source, program, out.key.nvrtc_options, !target.cubin);
  ++counters_.compiles;
  if (!image)
    throw_nvrtc_failure(unit, out.key, program, image.error());
  out.concrete = std::move(unit.concrete);
  out.entry.key_material = out.key.material();
  out.entry.launch = std::move(unit.launch);
  out.entry.ptx = !target.cubin;
  out.entry.image = std::move(image.value());
  if (store_on_disk)
    store(request, out);
  return out;
}

void KernelProvider::store(const KernelRequest& request, ProvidedKernels& kernels) {
  kernels.key = key_of(request, target_for(request));
  kernels.entry.key_material = kernels.key.material();
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

void KernelProvider::reject(const ProvidedKernels& kernels, const std::string& problem) {
  if (!disk_)
    return;
  ++counters_.disk_rejects;
  warnings_.warn("cache entry " + disk_->path(kernels.key.file_name()) + " is unusable (" + problem +
                 "); deleted it, recompiling");
  disk_->remove(kernels.key.file_name());
}

} // namespace fusegen::runtime

#include "DiskCache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <vector>

namespace fusegen::runtime {
namespace {

std::string errno_text() { return std::strerror(errno); }

class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error close may carry for written data.
  bool close() {
    int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

private:
  int fd_;
};

// Reads until `size` bytes or the end of the file; returns how many.
Result<size_t> read_up_to(int fd, char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Error{"read failed: " + errno_text()};
    if (n == 0)
      break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Status write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Error{"write failed: " + errno_text()};
    done += static_cast<size_t>(n);
  }
  return Status::success();
}

bool is_hex64(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

bool is_entry_name(std::string_view name) {
  return name.size() == 64 + kEntrySuffix.size() && name.ends_with(kEntrySuffix) && is_hex64(name.substr(0, 64));
}

bool is_temp_name(std::string_view name) {
  const size_t entry_name = 64 + kEntrySuffix.size();
  if (name.size() != kTempPrefix.size() + entry_name + 7 || !name.starts_with(kTempPrefix))
    return false;
  return is_entry_name(name.substr(kTempPrefix.size(), entry_name)) && name[kTempPrefix.size() + entry_name] == '-';
}

Result<std::string> DiskCache::read_entry_file(const std::string& path) {
  // Non-blocking, so that a FIFO or device in an entry's place cannot stall
  // the open; the fstat below then refuses anything but a regular file.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0)
    return Error{errno == ELOOP ? "a link is in its place" : "cannot open: " + errno_text()};
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0)
    return Error{"cannot stat: " + errno_text()};
  if (!S_ISREG(info.st_mode))
    return Error{S_ISDIR(info.st_mode) ? "a directory is in its place" : "not a regular file"};
  // Size and magic before anything is allocated for the rest: junk of any
  // size costs one small read.
  if (static_cast<uint64_t>(info.st_size) > kMaxEntryBytes)
    return Error{"too large for an entry (" + std::to_string(info.st_size) + " bytes, at most " +
                 std::to_string(kMaxEntryBytes) + ")"};
  std::string bytes(kCacheMagic.size(), '\0');
  Result<size_t> head = read_up_to(fd.get(), bytes.data(), bytes.size());
  if (!head)
    return Error{head.error()};
  if (head.value() < bytes.size() || std::string_view(bytes) != kCacheMagic) {
    bytes.resize(head.value());
    return bytes; // decode_entry says what is wrong with so few or such bytes
  }
  try {
    bytes.resize(static_cast<size_t>(info.st_size));
  } catch (const std::bad_alloc&) {
    return Error{"cannot allocate " + std::to_string(info.st_size) + " bytes to read it"};
  }
  Result<size_t> rest = read_up_to(fd.get(), bytes.data() + head.value(), bytes.size() - head.value());
  if (!rest)
    return Error{rest.error()};
  bytes.resize(head.value() + rest.value()); // a file that shrank meanwhile
  return bytes;
}

DiskCache::Loaded DiskCache::load(const CacheKey& key) const {
  Loaded result;
  const std::string file = path(key.file_name());
  struct stat info {};
  if (::lstat(file.c_str(), &info) != 0) {
    if (errno == ENOENT)
      return result; // Miss
    result.status = Lookup::Bad;
    result.problem = "cannot stat: " + errno_text();
    return result;
  }
  if (!S_ISREG(info.st_mode)) {
    result.status = Lookup::Bad;
    result.problem = S_ISDIR(info.st_mode) ? "a directory is in its place" : "not a regular file";
    return result;
  }
  Result<std::string> bytes = read_entry_file(file);
  if (!bytes) {
    result.status = Lookup::Bad;
    result.problem = bytes.error();
    return result;
  }
  Result<CacheEntry> entry = decode_entry(bytes.value());
  if (!entry) {
    result.status = Lookup::Bad;
    result.problem = entry.error();
    return result;
  }
  const std::string expected = key.material();
  if (entry.value().key_material != expected) {
    result.status = Lookup::Bad;
    result.problem = "written for another key: " + describe_key_difference(entry.value().key_material, expected);
    return result;
  }
  if (Status usable = check_entry_matches_key(entry.value()); !usable) {
    result.status = Lookup::Bad;
    result.problem = usable.error();
    return result;
  }
  result.status = Lookup::Hit;
  result.entry = std::move(entry.value());
  return result;
}

Status DiskCache::store_as(const std::string& name, const CacheEntry& entry) const {
  std::call_once(swept_, [this] { remove_stale_temp_files(); });
  const std::string bytes = encode_entry(entry);
  if (bytes.size() > kMaxEntryBytes)
    return Error{"an entry of " + std::to_string(bytes.size()) + " bytes is over the cache's limit of " +
                 std::to_string(kMaxEntryBytes) + " bytes"};
  std::string temp = path(std::string(kTempPrefix) + name + "-XXXXXX");
  std::vector<char> temp_name(temp.begin(), temp.end());
  temp_name.push_back('\0');
  FileDescriptor fd(::mkostemp(temp_name.data(), O_CLOEXEC)); // mode 0600
  if (fd.get() < 0)
    return Error{"cannot write to the kernel cache directory " + dir_ + ": cannot create a file: " + errno_text()};
  temp.assign(temp_name.data());
  Status written = write_all(fd.get(), bytes);
  if (written && ::fsync(fd.get()) != 0)
    written = Error{"fsync failed: " + errno_text()};
  if (!fd.close() && written)
    written = Error{"close failed: " + errno_text()};
  if (written && ::rename(temp.c_str(), path(name).c_str()) != 0)
    written = Error{"cannot rename into place: " + errno_text()};
  if (!written) {
    ::unlink(temp.c_str());
    return Error{"cannot write to the kernel cache directory " + dir_ + ": " + written.error()};
  }
  // Make the rename itself durable.
  FileDescriptor dir_fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0)
    ::fsync(dir_fd.get());
  return Status::success();
}

void DiskCache::remove(const std::string& file_name) const {
  std::error_code ec;
  std::filesystem::remove_all(path(file_name), ec);
}

size_t DiskCache::remove_stale_temp_files(std::chrono::seconds max_age) const {
  FileDescriptor dir_fd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0)
    return 0;
  // fdopendir takes the descriptor over; a duplicate keeps dir_fd valid for
  // the lstat and unlink calls relative to it.
  int listing_fd = ::dup(dir_fd.get());
  DIR* listing = listing_fd >= 0 ? ::fdopendir(listing_fd) : nullptr;
  if (!listing) {
    if (listing_fd >= 0)
      ::close(listing_fd);
    return 0;
  }
  const auto cutoff = std::chrono::system_clock::now() - max_age;
  const time_t cutoff_seconds = std::chrono::system_clock::to_time_t(cutoff);
  std::vector<std::string> stale;
  while (const dirent* item = ::readdir(listing)) {
    std::string_view name(item->d_name);
    if (!is_temp_name(name))
      continue;
    struct stat info {};
    if (::fstatat(dir_fd.get(), item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    // Only our own plain files: never follow a link or touch a directory.
    if (S_ISREG(info.st_mode) && info.st_uid == ::geteuid() && info.st_mtime < cutoff_seconds)
      stale.emplace_back(name);
  }
  ::closedir(listing);
  size_t removed = 0;
  for (const std::string& name : stale)
    if (::unlinkat(dir_fd.get(), name.c_str(), 0) == 0)
      ++removed;
  return removed;
}

} // namespace fusegen::runtime

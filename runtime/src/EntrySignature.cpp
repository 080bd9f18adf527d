#include "EntrySignature.h"

#include "ByteIO.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fusegen::runtime {
namespace {

constexpr std::string_view kDomain = "fusegen-signed-entry-v1";

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

} // namespace

Result<FleetKey> FleetKey::load(const std::string& path) {
  auto refuse = [&](const std::string& why) { return Error{"cannot use the cache key file " + path + ": " + why}; };
  // Checked on the open file itself, so that what is read is what was
  // checked; non-blocking, so that a FIFO in its place cannot stall the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return refuse(std::strerror(errno));
  struct stat info {};
  std::string key;
  std::string problem;
  if (::fstat(fd, &info) != 0)
    problem = std::strerror(errno);
  else if (!S_ISREG(info.st_mode))
    problem = "not a regular file";
  else if (info.st_uid != ::geteuid())
    problem = "owned by uid " + std::to_string(info.st_uid) + ", not by this user";
  else if (info.st_mode & (S_IRWXG | S_IRWXO))
    problem = "its group or others can read or write it (mode " + octal_mode(info.st_mode) + "); use chmod 600";
  char buffer[kMaxFleetKeyBytes + 64];
  while (problem.empty() && key.size() <= kMaxFleetKeyBytes + 32) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      problem = std::strerror(errno);
    if (n <= 0)
      break;
    key.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!problem.empty())
    return refuse(problem);
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ' || key.back() == '\t'))
    key.pop_back();
  if (key.size() < kMinFleetKeyBytes || key.size() > kMaxFleetKeyBytes)
    return refuse("it holds " + std::to_string(key.size()) + " bytes (a key is " + std::to_string(kMinFleetKeyBytes) +
                  " to " + std::to_string(kMaxFleetKeyBytes) + "; e.g. openssl rand -hex 32)");
  return FleetKey(std::move(key));
}

std::string FleetKey::mac(std::string_view name, std::string_view entry) const {
  std::string message;
  message.reserve(kDomain.size() + name.size() + entry.size() + 2);
  message.append(kDomain).push_back('\0');
  message.append(name).push_back('\0');
  message.append(entry);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), bytes_.data(), static_cast<int>(bytes_.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length) ||
      length != kSignatureBytes)
    return std::string(); // never equal to a stored signature (verify checks the size)
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string FleetKey::sign(std::string_view name, std::string_view entry) const {
  ByteWriter out;
  out.raw(kSignedEntryMagic);
  out.u32(kSignedEntryVersion);
  std::string signature = mac(name, entry);
  signature.resize(kSignatureBytes, '\0');
  out.raw(signature);
  out.raw(entry);
  return out.take();
}

Result<std::string_view> FleetKey::verify(std::string_view name, std::string_view signed_value) const {
  if (signed_value.size() < kSignedHeaderBytes || !signed_value.starts_with(kSignedEntryMagic))
    return Error{"not a signed entry"};
  ByteReader in(signed_value.substr(kSignedEntryMagic.size()));
  uint32_t version = 0;
  std::string_view stored;
  if (!in.u32(version) || !in.raw(kSignatureBytes, stored))
    return Error{"not a signed entry"};
  if (version != kSignedEntryVersion)
    return Error{"signed with format version " + std::to_string(version) + " (expected " +
                 std::to_string(kSignedEntryVersion) + ")"};
  std::string_view entry = signed_value.substr(kSignedHeaderBytes);
  const std::string expected = mac(name, entry);
  if (expected.size() != kSignatureBytes || CRYPTO_memcmp(expected.data(), stored.data(), kSignatureBytes) != 0)
    return Error{"bad signature (tampered, or signed with another key)"};
  return entry;
}

} // namespace fusegen::runtime

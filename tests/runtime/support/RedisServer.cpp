#include "support/RedisServer.h"

#include "RedisConnection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace fusegen::testing {
namespace {

// A port the kernel had free a moment ago.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

bool answers_ping(int port) {
  runtime::RedisAddress address;
  address.host = "127.0.0.1";
  address.port = port;
  auto connection = runtime::RedisConnection::open(address, std::chrono::milliseconds(200), 1 << 20);
  if (!connection)
    return false;
  auto reply = connection.value()->command({"PING"});
  return reply && reply.value().text == "PONG";
}

} // namespace

std::string redis_server_path() {
  for (const char* path : {"/usr/bin/redis-server", "/usr/local/bin/redis-server", "/usr/sbin/redis-server"})
    if (::access(path, X_OK) == 0)
      return path;
  return "";
}

RedisServer::RedisServer(const std::string& extra_args) : extra_args_(extra_args) {
  for (int attempt = 0; attempt < 5 && !started(); ++attempt) {
    port_ = free_port();
    if (port_)
      start();
  }
}

RedisServer::~RedisServer() { kill(); }

bool RedisServer::start() {
  const std::string server = redis_server_path();
  if (server.empty()) {
    error_ = "no redis-server";
    return false;
  }
  const std::string command = "exec " + server + " --port " + std::to_string(port_) +
                              " --bind 127.0.0.1 --save '' --appendonly no --daemonize no --loglevel warning "
                              "--dir '" +
                              dir_.path() + "' --logfile '" + dir_.file("redis.log") + "' " + extra_args_;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (pid < 0) {
    error_ = "fork failed";
    return false;
  }
  pid_ = pid;
  for (int i = 0; i < 200; ++i) { // up to 10 s
    if (answers_ping(port_))
      return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) { // exited: the port was taken meanwhile
      pid_ = -1;
      error_ = "redis-server exited: " + read_text(dir_.file("redis.log"));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill();
  error_ = "redis-server did not answer";
  return false;
}

void RedisServer::kill() {
  if (pid_ <= 0)
    return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void RedisServer::pause() {
  if (pid_ > 0)
    ::kill(pid_, SIGSTOP);
}

void RedisServer::resume() {
  if (pid_ > 0)
    ::kill(pid_, SIGCONT);
}

bool RedisServer::restart() {
  kill();
  // The port was ours a moment ago; a new server may need a few tries while
  // the old sockets close.
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (start())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string RedisServer::cli(const std::string& args) const {
  CommandResult result = run_command("redis-cli -p " + std::to_string(port_) + " " + args);
  return result.exit_code == 0 ? result.output : "";
}

} // namespace fusegen::testing

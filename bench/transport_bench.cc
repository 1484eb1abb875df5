// The transport's floor (issue 22): what one request and its reply cost
// over loopback TCP with many connections, before fedldp does any work.
//
// Each benchmark starts an echo server in a child process (this program,
// re-executed with --serve=<kind>), opens one connection per client, keeps
// one call in flight on every connection and counts the server's CPU time
// from /proc/<pid>/stat. The kinds:
//   raw-epoll       a plain epoll loop reading 100 bytes and writing 20: the
//                   kernel's share, and the baseline of the ratio table;
//   grpc-callback   a gRPC unary method on the callback API, as fedldp's
//                   coordinators are built;
//   grpc-cq         a gRPC unary method on the completion-queue API, one
//                   thread per queue (1 or 2 queues);
//   grpc-stream     one gRPC bidi stream per client, a message per request.
// The gRPC clients use the callback API with a channel and a TCP connection
// each, as `fedldp load --driver callback` does. Server and clients share the
// machine, as in `fedldp load`.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

// A call's sizes: by default about a FedSel report with its token, and a
// verdict; --request-bytes, --reply-bytes and --metadata-bytes give a
// call of fedldp's own sizes (a Submit whose reply brings the next round's
// model, its token and session in metadata).
std::size_t request_bytes = 100;
std::size_t reply_bytes = 20;
std::size_t metadata_bytes = 0;  // split between two entries, as token and session
long calls_per_run = 100000;     // --calls=N

enum Kind : int { kRawEpoll, kGrpcCallback, kGrpcCq, kGrpcStream };
const char* const kKindNames[] = {"raw-epoll", "grpc-callback", "grpc-cq", "grpc-stream"};

// ---------------------------------------------------------------- servers

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "transport_bench server: %s\n", what.c_str());
  std::exit(1);
}

// Ends the server when its parent closes our stdin (or dies).
void ExitWhenStdinCloses() {
  std::thread([] {
    char c;
    while (::read(0, &c, 1) > 0) {
    }
    std::_Exit(0);
  }).detach();
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int ServeRawEpoll() {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
      ::listen(listener, 4096) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    Fail(std::string("cannot listen on loopback: ") + std::strerror(errno));
  }
  std::printf("%d\n", ntohs(address.sin_port));
  std::fflush(stdout);
  ExitWhenStdinCloses();
  const int poller = ::epoll_create1(0);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = listener;
  ::epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
  std::vector<epoll_event> ready(256);
  char in[4096];
  const std::string reply(reply_bytes, '\0');
  for (;;) {
    const int n = ::epoll_wait(poller, ready.data(), static_cast<int>(ready.size()), -1);
    for (int i = 0; i < n; ++i) {
      const int fd = ready[i].data.fd;
      if (fd == listener) {
        const int connection = ::accept(listener, nullptr, nullptr);
        if (connection < 0) continue;
        SetNoDelay(connection);
        event.data.fd = connection;
        ::epoll_ctl(poller, EPOLL_CTL_ADD, connection, &event);
      } else if (::read(fd, in, sizeof in) <= 0 || ::write(fd, reply.data(), reply.size()) < 0) {
        ::close(fd);
      }
    }
  }
}

grpc::ByteBuffer Bytes(std::size_t n) {
  grpc::Slice slice(std::string(n, 'x'));
  return grpc::ByteBuffer(&slice, 1);
}

// An echo on the callback API. Unary: read the request, answer and finish.
// Stream (one per client): answer every message read with one written.
class CallbackEcho final : public grpc::CallbackGenericService {
 public:
  explicit CallbackEcho(bool stream) : stream_(stream) {}

 private:
  struct Reactor final : grpc::ServerGenericBidiReactor {
    explicit Reactor(bool stream) : stream(stream) { StartRead(&request); }
    void OnReadDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status::OK);
      } else if (stream) {
        StartWrite(&reply);
      } else {
        StartWriteAndFinish(&reply, grpc::WriteOptions(), grpc::Status::OK);
      }
    }
    void OnWriteDone(bool ok) override {
      if (!stream) return;
      if (ok) {
        StartRead(&request);
      } else {
        Finish(grpc::Status::OK);
      }
    }
    void OnDone() override { delete this; }
    const bool stream;
    grpc::ByteBuffer request, reply = Bytes(reply_bytes);
  };
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    return new Reactor(stream_);
  }
  const bool stream_;
};

// A unary echo on the completion-queue API: each call is a small state
// machine whose steps the queue's thread runs, with no hand-off to another.
struct QueuedCall {
  enum Step { kAccepted, kRead, kFinished } step = kAccepted;
  grpc::GenericServerContext context;
  grpc::GenericServerAsyncReaderWriter stream{&context};
  grpc::ByteBuffer request, reply = Bytes(reply_bytes);
};

void RunQueue(grpc::AsyncGenericService* service, grpc::ServerCompletionQueue* queue) {
  const auto await_call = [&] {
    auto* call = new QueuedCall;
    service->RequestCall(&call->context, &call->stream, queue, queue, call);
  };
  for (int i = 0; i < 64; ++i) await_call();
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) {
    auto* call = static_cast<QueuedCall*>(tag);
    switch (call->step) {
      case QueuedCall::kAccepted:
        if (!ok) {
          delete call;
          break;
        }
        await_call();
        call->step = QueuedCall::kRead;
        call->stream.Read(&call->request, call);
        break;
      case QueuedCall::kRead:
        call->step = QueuedCall::kFinished;
        if (ok) {
          call->stream.WriteAndFinish(call->reply, grpc::WriteOptions(), grpc::Status::OK, call);
        } else {
          call->stream.Finish(grpc::Status::OK, call);
        }
        break;
      case QueuedCall::kFinished:
        delete call;
        break;
    }
  }
}

int ServeGrpc(Kind kind, int threads) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  CallbackEcho echo(kind == kGrpcStream);
  grpc::AsyncGenericService queued;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  if (kind == kGrpcCallback || kind == kGrpcStream) builder.RegisterCallbackGenericService(&echo);
  if (kind == kGrpcCq) {
    builder.RegisterAsyncGenericService(&queued);
    for (int i = 0; i < threads; ++i) queues.push_back(builder.AddCompletionQueue());
  }
  const auto server = builder.BuildAndStart();
  if (!server) Fail("gRPC server did not start");
  std::printf("%d\n", port);
  std::fflush(stdout);
  ExitWhenStdinCloses();
  std::vector<std::thread> runners;
  for (auto& queue : queues) runners.emplace_back(RunQueue, &queued, queue.get());
  for (;;) ::pause();
}

// ---------------------------------------------------------------- clients

// The server's child process: started with --serve=<kind>, stopped when
// its stdin closes.
class ServerProcess {
 public:
  ServerProcess(Kind kind, int threads) {
    // Everything the child needs is made before fork: it may only exec.
    const std::string serve = std::string("--serve=") + kKindNames[kind];
    const std::string server_threads = "--server-threads=" + std::to_string(threads);
    const std::string reply = "--reply-bytes=" + std::to_string(reply_bytes);
    int to_child[2], from_child[2];
    // Close-on-exec, so no later server inherits this one's pipes; dup2
    // clears the flag on the child's stdin and stdout.
    if (::pipe2(to_child, O_CLOEXEC) != 0) return;
    if (::pipe2(from_child, O_CLOEXEC) != 0) {
      ::close(to_child[0]);
      ::close(to_child[1]);
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(to_child[0], 0);
      ::dup2(from_child[1], 1);
      ::execl("/proc/self/exe", "transport_bench", serve.c_str(), server_threads.c_str(),
              reply.c_str(), nullptr);
      std::_Exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    stdin_ = to_child[1];
    std::string line;
    char c;
    while (::read(from_child[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(from_child[0]);
    port_ = std::atoi(line.c_str());
  }
  ~ServerProcess() {
    if (stdin_ >= 0) ::close(stdin_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }
  double CpuSeconds() const { return ProcessCpuSeconds(pid_); }

  static double ProcessCpuSeconds(pid_t pid) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    std::getline(file, text);
    // Fields after the command's closing parenthesis: state is field 3,
    // utime field 14 and stime field 15.
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i >= 14) ticks += std::atof(field.c_str());
    }
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int port_ = 0;
};

// A connection per client to the raw loop; empty if one fails.
std::vector<int> RawConnect(int port, int clients) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  std::vector<int> sockets;
  for (int i = 0; i < clients; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      if (fd >= 0) ::close(fd);
      for (int open : sockets) ::close(open);
      return {};
    }
    SetNoDelay(fd);
    sockets.push_back(fd);
  }
  return sockets;
}

// Runs `calls` calls, one in flight per connection.
bool RawCalls(const std::vector<int>& sockets, long calls) {
  const int poller = ::epoll_create1(0);
  for (int fd : sockets) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    ::epoll_ctl(poller, EPOLL_CTL_ADD, fd, &event);
  }
  const std::string request(request_bytes, '\0');
  char in[4096];
  long sent = 0, answered = 0;
  bool ok = true;
  for (int fd : sockets) {
    if (sent == calls) break;
    if (::write(fd, request.data(), request.size()) < 0) ok = false;
    ++sent;
  }
  std::vector<epoll_event> ready(256);
  while (ok && answered < calls) {
    const int n = ::epoll_wait(poller, ready.data(), static_cast<int>(ready.size()), -1);
    for (int i = 0; ok && i < n; ++i) {
      const int fd = ready[i].data.fd;
      if (::read(fd, in, sizeof in) <= 0) ok = false;
      ++answered;
      if (sent < calls) {
        if (::write(fd, request.data(), request.size()) < 0) ok = false;
        ++sent;
      }
    }
  }
  ::close(poller);
  return ok;
}

// Counts down the calls left and wakes the waiter when every client is done.
struct Tally {
  std::atomic<long> left;
  std::atomic<long> failed{0};
  std::mutex mutex;
  std::condition_variable all_done;
  int running;

  Tally(long calls, int clients) : left(calls), running(clients) {}
  bool Take() { return left.fetch_sub(1) > 0; }
  void ClientDone() {
    std::lock_guard lock(mutex);
    if (--running == 0) all_done.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mutex);
    all_done.wait(lock, [&] { return running == 0; });
  }
};

std::vector<std::unique_ptr<grpc::GenericStub>> Connect(int port, int clients) {
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  const std::string target = "127.0.0.1:" + std::to_string(port);
  for (int i = 0; i < clients; ++i) {
    grpc::ChannelArguments arguments;
    // A TCP connection per channel, as fedldp's MakeChannel asks.
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      return {};
    }
    stubs.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
  return stubs;
}

// A unary call after another per client, from gRPC's callback threads.
class UnaryClient {
 public:
  UnaryClient(grpc::GenericStub* stub, const grpc::ByteBuffer* request, Tally* tally)
      : stub_(stub), request_(request), tally_(tally) {}
  void Next() {
    if (!tally_->Take()) {
      tally_->ClientDone();
      return;
    }
    context_ = std::make_unique<grpc::ClientContext>();
    if (metadata_bytes > 0) {
      context_->AddMetadata("fedldp-token", std::string(metadata_bytes - metadata_bytes / 3, 'a'));
      context_->AddMetadata("fedldp-session", std::string(metadata_bytes / 3, 'b'));
    }
    stub_->UnaryCall(context_.get(), "/transport.Echo/Call", grpc::StubOptions(), request_, &reply_,
                     [this](const grpc::Status& status) {
                       if (!status.ok()) {
                         ++tally_->failed;
                         tally_->ClientDone();
                         return;
                       }
                       Next();
                     });
  }

 private:
  grpc::GenericStub* stub_;
  const grpc::ByteBuffer* request_;
  Tally* tally_;
  std::unique_ptr<grpc::ClientContext> context_;
  grpc::ByteBuffer reply_;
};

// One bidi stream per client: write a message, read its answer, again.
class StreamClient final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamClient(grpc::GenericStub* stub, const grpc::ByteBuffer* request, Tally* tally)
      : request_(request), tally_(tally) {
    stub->PrepareBidiStreamingCall(&context_, "/transport.Echo/Stream", grpc::StubOptions(), this);
  }
  void Go() {
    StartCall();
    Next();
  }
  // The next message goes once both the write and the read of this one are
  // done: a stream takes one of each at a time.
  void OnWriteDone(bool ok) override {
    if (ok) Step();
  }
  void OnReadDone(bool ok) override {
    if (ok) Step();
  }
  void OnDone(const grpc::Status& status) override {
    if (!status.ok()) ++tally_->failed;
    tally_->ClientDone();
  }

 private:
  void Next() {
    if (!tally_->Take()) {
      StartWritesDone();
      return;
    }
    pending_ = 2;
    StartRead(&reply_);
    StartWrite(request_);
  }
  void Step() {
    if (pending_.fetch_sub(1) == 1) Next();
  }
  std::atomic<int> pending_{0};
  const grpc::ByteBuffer* request_;
  Tally* tally_;
  grpc::ClientContext context_;
  grpc::ByteBuffer reply_;
};

bool GrpcCalls(Kind kind, const std::vector<std::unique_ptr<grpc::GenericStub>>& stubs,
               long calls) {
  const grpc::ByteBuffer request = Bytes(request_bytes);
  Tally tally(calls, static_cast<int>(stubs.size()));
  if (kind == kGrpcStream) {
    std::vector<std::unique_ptr<StreamClient>> streams;
    for (const auto& stub : stubs) {
      streams.push_back(std::make_unique<StreamClient>(stub.get(), &request, &tally));
    }
    for (auto& stream : streams) stream->Go();
    tally.Wait();
  } else {
    std::vector<std::unique_ptr<UnaryClient>> unary;
    for (const auto& stub : stubs) {
      unary.push_back(std::make_unique<UnaryClient>(stub.get(), &request, &tally));
    }
    for (auto& client : unary) client->Next();
    tally.Wait();
  }
  return tally.failed == 0;
}

// `threads` is the server's (completion queues for grpc-cq).
void BM_Transport(benchmark::State& state, Kind kind, int clients, int threads) {
  // The kernel's loop is ~5x faster: more calls for the same resolution of
  // the server's CPU time, which /proc counts in 10 ms ticks.
  const long calls = kind == kRawEpoll ? 4 * calls_per_run : calls_per_run;
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  const rlim_t needed = static_cast<rlim_t>(2 * clients + 256);
  if (files.rlim_cur < needed) {
    files.rlim_cur = std::min(needed, files.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &files);
    if (files.rlim_cur < needed) {
      state.SkipWithError("too few open files allowed (ulimit -n)");
      return;
    }
  }
  ServerProcess server(kind, threads);
  if (server.port() <= 0) {
    state.SkipWithError("the server did not start");
    return;
  }
  // Connections are made before the clock starts.
  std::vector<int> sockets;
  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  if (kind == kRawEpoll) {
    sockets = RawConnect(server.port(), clients);
  } else {
    stubs = Connect(server.port(), clients);
  }
  if (sockets.empty() && stubs.empty()) {
    state.SkipWithError("cannot connect to the server");
    return;
  }
  double server_cpu = 0, client_cpu = 0;
  for (auto _ : state) {
    const double server_before = server.CpuSeconds();
    const double client_before = ServerProcess::ProcessCpuSeconds(::getpid());
    const auto start = std::chrono::steady_clock::now();
    const bool ok = kind == kRawEpoll ? RawCalls(sockets, calls) : GrpcCalls(kind, stubs, calls);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    server_cpu += server.CpuSeconds() - server_before;
    client_cpu += ServerProcess::ProcessCpuSeconds(::getpid()) - client_before;
    if (!ok) {
      state.SkipWithError("a call failed");
      break;
    }
  }
  for (int fd : sockets) ::close(fd);
  if (state.error_occurred()) return;
  const double all_calls = static_cast<double>(state.iterations() * calls);
  state.SetItemsProcessed(state.iterations() * calls);
  state.counters["server_us"] = 1e6 * server_cpu / all_calls;
  state.counters["client_us"] = 1e6 * client_cpu / all_calls;
}

// Registered from main, after --clients is read.
void RegisterTransports(int clients) {
  const std::string suffix = "/clients:" + std::to_string(clients);
  const auto add = [&](Kind kind, int threads, const std::string& name) {
    benchmark::RegisterBenchmark(("transport/" + name + suffix).c_str(), BM_Transport, kind,
                                 clients, threads)
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  };
  add(kRawEpoll, 1, "raw-epoll");
  add(kGrpcCallback, 0, "grpc-callback");
  add(kGrpcCq, 1, "grpc-cq/threads:1");
  add(kGrpcCq, 2, "grpc-cq/threads:2");
  add(kGrpcStream, 0, "grpc-stream");
}

// Prints each kind beside the raw loop measured in the same run.
class FloorReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      std::string name = run.benchmark_name();
      name = name.substr(0, name.find("/iterations:"));
      rows_.push_back({name, run.counters.at("items_per_second").value,
                       run.counters.at("server_us").value, run.counters.at("client_us").value});
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    if (rows_.empty()) return;
    const Row* raw = nullptr;
    for (const auto& row : rows_) {
      if (row.name.rfind("transport/raw-epoll/", 0) == 0) raw = &row;
    }
    std::printf("\n%-40s %10s %10s %10s %14s\n", "transport (CPU per call)", "calls/s", "server us",
                "client us", "server CPU/raw");
    for (const auto& row : rows_) {
      std::printf("%-40s %10.0f %10.1f %10.1f", row.name.c_str(), row.rate, row.server_us,
                  row.client_us);
      if (raw != nullptr && raw->server_us > 0) {
        std::printf(" %14.1f\n", row.server_us / raw->server_us);
      } else {
        std::printf(" %14s\n", "-");
      }
    }
  }

 private:
  struct Row {
    std::string name;
    double rate, server_us, client_us;
  };
  std::vector<Row> rows_;
};

// A size flag (--request-bytes=N, ...): where it goes and its value (-1:
// not a size from 0 to 4,000,000); {nullptr, 0} for another argument.
std::pair<std::size_t*, long> SizeFlag(const std::string& arg) {
  for (const auto& [name, where] :
       {std::pair{"--request-bytes=", &request_bytes}, std::pair{"--reply-bytes=", &reply_bytes},
        std::pair{"--metadata-bytes=", &metadata_bytes}}) {
    const std::string flag = name;
    if (arg.rfind(flag, 0) != 0) continue;
    char* end = nullptr;
    const long n = std::strtol(arg.c_str() + flag.size(), &end, 10);
    const bool ok = *end == '\0' && end != arg.c_str() + flag.size() && n >= 0 && n <= 4000000;
    return {where, ok ? n : -1};
  }
  return {nullptr, 0};
}

void PrintHelp() {
  std::printf(
      "fedldp_transport_bench [--calls=N] [--clients=N] [Google Benchmark flags]\n"
      "  Server CPU per call and calls/s of echo servers over loopback, a\n"
      "  connection per client: raw epoll, gRPC callback, completion-queue\n"
      "  and stream (docs/deploying.md).\n"
      "  --calls    calls per gRPC run (100000; the raw loop makes 4x as many)\n"
      "  --clients  connections, one call in flight on each (1000)\n"
      "  --request-bytes, --reply-bytes  a call's sizes (100, 20)\n"
      "  --metadata-bytes  bytes of two metadata entries on every call, as fedldp's\n"
      "             token and session (0)\n\n");
}

struct Args {
  int server_threads = 1, clients = 1000;
  std::string serve;        // --serve=KIND: this process is that server
  std::vector<char*> rest;  // Google Benchmark's
};

// This program's own flags (the sizes and --calls into their globals); the
// others left for Google Benchmark. nullopt: a bad value, said on stderr.
std::optional<Args> ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--serve=", 0) == 0) {
      a.serve = arg.substr(8);
    } else if (arg.rfind("--server-threads=", 0) == 0) {
      a.server_threads = std::atoi(arg.c_str() + 17);
    } else if (arg.rfind("--calls=", 0) == 0) {
      calls_per_run = std::atol(arg.c_str() + 8);
      if (calls_per_run <= 0) {
        std::fprintf(stderr, "--calls must be a positive number of calls\n");
        return std::nullopt;
      }
    } else if (arg.rfind("--clients=", 0) == 0) {
      a.clients = std::atoi(arg.c_str() + 10);
      if (a.clients <= 0) {
        std::fprintf(stderr, "--clients must be a positive number of connections\n");
        return std::nullopt;
      }
    } else if (const auto size = SizeFlag(arg); size.first != nullptr) {
      if (size.second < 0) {
        std::fprintf(stderr, "%s takes a number of bytes from 0 to 4,000,000\n", arg.c_str());
        return std::nullopt;
      }
      *size.first = static_cast<std::size_t>(size.second);
    } else {
      if (arg == "--help") PrintHelp();
      a.rest.push_back(argv[i]);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv);
  if (!args) return 2;
  if (!args->serve.empty()) {
    for (int kind = kRawEpoll; kind <= kGrpcStream; ++kind) {
      if (args->serve != kKindNames[kind]) continue;
      return kind == kRawEpoll ? ServeRawEpoll()
                               : ServeGrpc(static_cast<Kind>(kind), args->server_threads);
    }
    std::fprintf(stderr, "unknown --serve=%s\n", args->serve.c_str());
    return 2;
  }
  RegisterTransports(args->clients);
  int rest_count = static_cast<int>(args->rest.size());
  benchmark::Initialize(&rest_count, args->rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_count, args->rest.data())) return 1;
  FloorReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

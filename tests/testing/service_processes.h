// Deployment processes under test as a client or an attacker would meet
// them: start `fedldp serve` or `fedldp shuffle`, wait until it says it is
// ready, call any method with any body and metadata; every process started
// is killed when the test ends, before its folder is removed (TempDirTest).
#ifndef FEDLDP_TESTS_TESTING_SERVICE_PROCESSES_H_
#define FEDLDP_TESTS_TESTING_SERVICE_PROCESSES_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "testing/processes.h"
#include "testing/temp_dir.h"

namespace fedldp::testing {

class ServiceProcessTest : public TempDirTest {
 protected:
  using Metadata = std::map<std::string, std::string>;

  // Starts `args` and waits until its stderr holds `ready`.
  pid_t Start(const std::vector<std::string>& args, const std::string& ready,
              const std::string& name) {
    using processes::Read;
    const pid_t pid = processes::Spawn(args, Path(name + ".out"), Path(name + ".err"));
    EXPECT_TRUE(WaitFor(name + ".err", ready)) << Read(Path(name + ".err"));
    return pid;
  }

  // Whether file `name` holds `text` within `limit`.
  bool WaitFor(const std::string& name, const std::string& text,
               std::chrono::seconds limit = std::chrono::seconds(120)) const {
    const auto start = std::chrono::steady_clock::now();
    while (processes::Read(Path(name)).find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() - start > limit) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  // Calls `method` at `address` with `body` and `metadata`: the status.
  static grpc::Status Call(const std::string& address, const std::string& method,
                           const std::string& body, const Metadata& metadata = {},
                           std::chrono::seconds deadline = std::chrono::seconds(60)) {
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    grpc::GenericStub stub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
    grpc::Slice slice(body);
    const grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer reply;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &reply,
                   [&](grpc::Status status) { done.set_value(std::move(status)); });
    return done.get_future().get();
  }

  static std::string Method(const std::string& service, const std::string& name) {
    return "/fedldp.v1." + service + "/" + name;
  }

  static std::string Address(int port) { return "127.0.0.1:" + std::to_string(port); }

  // Enrols `count` clients in `state`; their tokens go to `state`.tokens.
  void Enrol(const std::string& state, int count) {
    const pid_t enrol = processes::Spawn({FEDLDP_BINARY, "enrol", "--state", Path(state), "--count",
                                          std::to_string(count), "--out", Path(state + ".tokens")},
                                         Path("enrol.out"), Path("enrol.err"));
    ASSERT_EQ(processes::Wait(enrol), 0) << processes::Read(Path("enrol.err"));
  }
};

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_SERVICE_PROCESSES_H_

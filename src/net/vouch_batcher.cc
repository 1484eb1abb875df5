#include "vouch_batcher.h"

#include <utility>
#include <vector>

#include "grpc_util.h"

namespace fedldp::net_internal {

namespace pb = ::fedldp::v1;

namespace {
constexpr auto kDeadline = std::chrono::seconds(3);

Status Verdict(const pb::VouchReply& answer) {
  if (answer.ok()) return {};
  return Error{answer.reason().empty() ? "refused" : answer.reason()};
}

Status Unreachable(const grpc::Status& status) {
  return Error{"the server cannot be asked (" + status.error_message() + ")"};
}
}  // namespace

VouchBatcher::VouchBatcher(pb::Coordinator::Stub& server, std::string shuffler_token)
    : server_(server),
      token_(std::move(shuffler_token)),
      thread_([this](std::stop_token stop) { Run(stop); }) {}

VouchBatcher::~VouchBatcher() {
  thread_.request_stop();
  queued_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  for (auto& p : queue_) p->answer = Error{"the shuffler is stopping"};
  queue_.clear();
  answered_.notify_all();
}

Status VouchBatcher::Ask(const std::string& token, const std::string& session, std::uint64_t user,
                         std::uint64_t round) {
  auto pending = std::make_shared<Pending>();
  pending->ask.set_token(token);
  pending->ask.set_session(session);
  pending->ask.set_user(user);
  pending->ask.set_round(round);
  std::unique_lock lock(mu_);
  if (thread_.get_stop_token().stop_requested()) return Error{"the shuffler is stopping"};
  queue_.push_back(pending);
  queued_.notify_one();
  answered_.wait(lock, [&] { return pending->answer.has_value(); });
  return *pending->answer;
}

void VouchBatcher::Run(std::stop_token stop) {
  for (;;) {
    std::deque<std::shared_ptr<Pending>> batch;
    {
      std::unique_lock lock(mu_);
      if (!queued_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
      const std::size_t n = std::min(queue_.size(), static_cast<std::size_t>(kMaxVouchAsks));
      batch.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    Answer(batch);
    std::lock_guard lock(mu_);
    answered_.notify_all();
  }
}

// Fills every pending's answer, under mu_ (its caller reads it there once
// answered_ is notified); the calls to the server are made without it.
void VouchBatcher::Answer(std::deque<std::shared_ptr<Pending>>& batch) {
  bool one_by_one = false;
  {
    std::lock_guard lock(mu_);
    one_by_one = many_unsupported_;
  }
  if (!one_by_one) {
    pb::VouchManyRequest request;
    request.set_shuffler_token(token_);
    for (const auto& p : batch) *request.add_asks() = p->ask;
    pb::VouchManyReply reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kDeadline);
    SetShufflerCredentials(&context, token_);
    const grpc::Status status = server_.VouchMany(&context, request, &reply);
    std::lock_guard lock(mu_);
    ++calls_;
    if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      many_unsupported_ = true;
      one_by_one = true;
    } else {
      asks_ += batch.size();
      const bool whole = status.ok() && reply.answers_size() == static_cast<int>(batch.size());
      for (std::size_t i = 0; i < batch.size(); ++i) {
        batch[i]->answer =
            !status.ok() ? Unreachable(status)
            : whole      ? Verdict(reply.answers(static_cast<int>(i)))
                    : Error{"the server answered " + std::to_string(reply.answers_size()) + " of " +
                            std::to_string(batch.size()) + " asks"};
      }
      return;
    }
  }
  for (const auto& p : batch) {
    Status answer = AskOne(p->ask);
    std::lock_guard lock(mu_);
    ++calls_;
    ++asks_;
    p->answer = std::move(answer);
  }
}

Status VouchBatcher::AskOne(const pb::VouchRequest& given) {
  pb::VouchRequest ask = given;
  ask.set_shuffler_token(token_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kDeadline);
  SetShufflerCredentials(&context, token_);
  pb::VouchReply answer;
  const grpc::Status status = server_.Vouch(&context, ask, &answer);
  if (!status.ok()) return Unreachable(status);
  return Verdict(answer);
}

std::uint64_t VouchBatcher::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

std::uint64_t VouchBatcher::asks() const {
  std::lock_guard lock(mu_);
  return asks_;
}

}  // namespace fedldp::net_internal

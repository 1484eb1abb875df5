// ProbeServer (grpc_util.h): why a peer gRPC cannot reach is a mistake in
// the command, told in one line with its fix, instead of a handshake
// retried for a day ("Handshake read failed"). One TCP connection, then
// what the peer answers: a TLS handshake checked as gRPC checks it (the CA,
// the name, the dates), or an HTTP/2 preface.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "grpc_util.h"

namespace fedldp::net_internal {
namespace {

// A connected TCP socket to host:port within `timeout` (reads and writes
// then time out alike), or -1.
int Connect(const std::string& host, const std::string& port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t size = sizeof error;
      if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0 || error != 0) {
        ::close(fd), fd = -1;
      }
    } else if (errno != 0 && errno != EISCONN) {
      ::close(fd), fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  ::fcntl(fd, F_SETFL, 0);  // blocking, with timeouts
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
using Ctx = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;
using Ssl = std::unique_ptr<SSL, decltype(&SSL_free)>;

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// The names a certificate holds (its DNS and IP subjectAltNames).
std::string NamesOf(X509* cert) {
  std::string names;
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
    std::string name;
    if (n->type == GEN_DNS) {
      name = reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName));
    } else if (n->type == GEN_IPADD && n->d.iPAddress->length == 4) {
      const unsigned char* ip = ASN1_STRING_get0_data(n->d.iPAddress);
      name = std::to_string(ip[0]) + "." + std::to_string(ip[1]) + "." + std::to_string(ip[2]) +
             "." + std::to_string(ip[3]);
    }
    if (!name.empty()) names += (names.empty() ? "" : ", ") + name;
  }
  GENERAL_NAMES_free(sans);
  return names.empty() ? "none" : names;
}

std::string Date(const ASN1_TIME* t) {
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), &BIO_free);
  ASN1_TIME_print(out.get(), t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

// What a finished handshake's verification says, as gRPC would judge it:
// OK, or the cause and the fix.
Status Verdict(SSL* ssl, const std::string& address, const std::string& host, const TlsFiles& tls,
               const char* ca_flag) {
  const long result = SSL_get_verify_result(ssl);
  if (result == X509_V_OK) return {};
  X509* cert = SSL_get0_peer_certificate(ssl);
  const std::string at = "the TLS certificate of " + address;
  switch (result) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return Error{at + " is not for " + host + " (it names " + NamesOf(cert) +
                   "): connect to a name it holds, or give the server a certificate whose "
                   "subjectAltName holds " +
                   host};
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return Error{at + " expired on " + Date(X509_get0_notAfter(cert)) +
                   ": the server needs a new one (then restart it)"};
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return Error{at + " is not valid before " + Date(X509_get0_notBefore(cert)) +
                   " (is this machine's clock right?)"};
    default:
      return Error{at + " is not trusted by " + ca_flag + " " + tls.ca + " (" +
                   X509_verify_cert_error_string(result) +
                   "): give the certificate the server uses (or the CA that signed it)"};
  }
}

// A TLS handshake on `fd` that trusts `tls.ca` (none: trusts nothing, and
// only tells whether the peer speaks TLS): done, refused by a peer that
// does not speak TLS (it sent what is no TLS record), or neither (it closed
// or stayed silent: a busy server, say).
enum class Shake { kDone, kNotTls, kUnknown };
Shake Handshake(int fd, const std::string& host, const TlsFiles& tls, Ssl& ssl) {
  Ctx ctx(SSL_CTX_new(TLS_client_method()), &SSL_CTX_free);
  if (!ctx) return Shake::kUnknown;
  if (!tls.ca.empty()) SSL_CTX_load_verify_locations(ctx.get(), tls.ca.c_str(), nullptr);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);  // judged after, by Verdict
  ssl.reset(SSL_new(ctx.get()));
  if (!ssl) return Shake::kUnknown;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
  if (IsIp(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    SSL_set_tlsext_host_name(ssl.get(), host.c_str());
  }
  static const unsigned char kH2[] = {2, 'h', '2'};
  SSL_set_alpn_protos(ssl.get(), kH2, sizeof kH2);
  SSL_set_fd(ssl.get(), fd);
  const int done = SSL_connect(ssl.get());
  const int error = done == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl.get(), done);
  ERR_clear_error();
  return done == 1 ? Shake::kDone : error == SSL_ERROR_SSL ? Shake::kNotTls : Shake::kUnknown;
}

// How the peer on `fd` answers an HTTP/2 connection preface: with a
// SETTINGS frame (a gRPC server), with something else (*said: its first
// line), or not at all (closed or silent: cannot tell).
enum class Preface { kHttp2, kOther, kSilent };
Preface AnswerToPreface(int fd, std::string* said) {
  static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
  if (::send(fd, kPreface, sizeof kPreface - 1, MSG_NOSIGNAL) < 0) return Preface::kSilent;
  char reply[64];
  const ssize_t n = ::recv(fd, reply, sizeof reply, 0);
  if (n <= 0) return Preface::kSilent;
  if (n >= 9 && reply[3] == 0x04) return Preface::kHttp2;  // a SETTINGS frame
  said->assign(reply, static_cast<std::size_t>(n));
  said->erase(std::min(said->find_first_of("\r\n"), said->size()));
  return Preface::kOther;
}

// The peer's answer to a preface on a connection of its own.
Preface Answer(const std::string& host, const std::string& port, std::chrono::milliseconds timeout,
               std::string* said) {
  Fd fd{Connect(host, port, timeout)};
  return fd.fd < 0 ? Preface::kSilent : AnswerToPreface(fd.fd, said);
}

}  // namespace

Status ProbeServer(const std::string& address, const TlsFiles& tls, const char* ca_flag,
                   std::chrono::milliseconds timeout) {
  const auto [host, port] = SplitAddress(address);
  Fd socket{Connect(host, port, timeout)};
  if (socket.fd < 0) return {};  // nothing listens (yet): retried
  Ssl ssl(nullptr, &SSL_free);
  const std::string not_tls = address + " does not answer TLS (a server started without " +
                              "--tls-cert?): connect without " + ca_flag + ", or serve with TLS";
  std::string said;
  if (tls.enabled()) {
    const Shake shake = Handshake(socket.fd, host, tls, ssl);
    if (shake == Shake::kDone) return Verdict(ssl.get(), address, host, tls, ca_flag);
    // A plaintext gRPC server drops a TLS hello unanswered, but answers
    // the HTTP/2 preface.
    if (shake == Shake::kNotTls || Answer(host, port, timeout, &said) == Preface::kHttp2) {
      return Error{not_tls};
    }
    return {};
  }
  if (Handshake(socket.fd, host, tls, ssl) == Shake::kDone) {
    return Error{address + " answers with TLS: give its certificate with " + std::string(ca_flag) +
                 " FILE"};
  }
  if (Answer(host, port, timeout, &said) == Preface::kOther) {
    return Error{address + " answers, but not as a gRPC server" +
                 (said.empty() ? std::string() : " (it said \"" + said + "\")") +
                 ": is this the port fedldp serve (or shuffle) listens on?"};
  }
  return {};
}

}  // namespace fedldp::net_internal

// CheckTlsFiles (net/services.h): every certificate and key file a TLS
// option names is parsed with OpenSSL (the library gRPC's TLS runs on in
// Debian) before anything is written or any connection is tried, so that a
// wrong file is one sentence naming it, not a handshake that fails for ever.
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <vector>

#include "fedldp/net/services.h"
#include "grpc_util.h"

namespace fedldp {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;
using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// OpenSSL's reason for the last failure, and its error queue emptied.
std::string OpensslReason() {
  const unsigned long code = ERR_peek_last_error();
  std::string reason = code != 0 && ERR_reason_error_string(code) != nullptr
                           ? ERR_reason_error_string(code)
                           : "unreadable";
  ERR_clear_error();
  return reason;
}

Bio Memory(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

// "" if the certificate is valid now, else why not.
std::string Validity(X509* c) {
  const auto date = [](const ASN1_TIME* t) {
    Bio out(BIO_new(BIO_s_mem()), &BIO_free);
    ASN1_TIME_print(out.get(), t);
    char* data = nullptr;
    const long n = BIO_get_mem_data(out.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
  };
  if (X509_cmp_current_time(X509_get0_notAfter(c)) < 0) {
    return "expired on " + date(X509_get0_notAfter(c));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(c)) > 0) {
    return "is not valid before " + date(X509_get0_notBefore(c));
  }
  return "";
}

// The file's PEM certificates (at least one, each valid now), or why not.
Result<std::vector<Certificate>> ReadCertificates(const std::string& path, const char* what) {
  auto pem = net_internal::ReadFile(path);
  if (!pem.ok()) return Error{what + std::string(" ") + pem.error()};
  Bio in = Memory(*pem);
  std::vector<Certificate> chain;
  ERR_clear_error();
  while (X509* c = PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr)) {
    chain.emplace_back(c, &X509_free);
    if (std::string why = Validity(c); !why.empty()) {
      return Error{std::string(what) + " " + path + ": certificate " +
                   std::to_string(chain.size()) + " " + why};
    }
  }
  const unsigned long last = ERR_peek_last_error();
  const bool at_end = last == 0 || ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (chain.empty() || !at_end) {
    const std::string reason = chain.empty() && at_end ? "" : " (" + OpensslReason() + ")";
    return Error{std::string(what) + " " + path + " holds no readable PEM certificate" + reason +
                 ": it must hold -----BEGIN CERTIFICATE----- blocks"};
  }
  ERR_clear_error();
  return chain;
}

// The unencrypted PEM private key of `path`, belonging to `certificate`.
Status CheckKey(const std::string& path, X509* certificate, const std::string& certificate_path) {
  auto pem = net_internal::ReadFile(path);
  if (!pem.ok()) return Error{"the key " + pem.error()};
  Bio in = Memory(*pem);
  ERR_clear_error();
  // No passphrase callback: an encrypted key fails here, as in gRPC.
  Key key(PEM_read_bio_PrivateKey(
              in.get(), nullptr, [](char*, int, int, void*) { return 0; }, nullptr),
          &EVP_PKEY_free);
  if (!key) {
    return Error{"the key " + path + " is not an unencrypted PEM private key (" + OpensslReason() +
                 ")"};
  }
  if (X509_check_private_key(certificate, key.get()) != 1) {
    ERR_clear_error();
    return Error{"the key " + path + " does not belong to the certificate " + certificate_path};
  }
  return {};
}

}  // namespace

Status CheckTlsFiles(const TlsFiles& tls) {
  if (!tls.certificate.empty()) {
    auto chain = ReadCertificates(tls.certificate, "the certificate");
    if (!chain.ok()) return Error{chain.error()};
    if (tls.key.empty()) return Error{"the certificate " + tls.certificate + " needs its key"};
    FEDLDP_RETURN_IF_ERROR(CheckKey(tls.key, chain->front().get(), tls.certificate));
  }
  if (!tls.ca.empty()) {
    auto trusted = ReadCertificates(tls.ca, "the CA file");
    if (!trusted.ok()) return Error{trusted.error()};
  }
  return {};
}

}  // namespace fedldp

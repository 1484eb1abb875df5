// Self-signed certificates made in the test (OpenSSL), for what the
// committed ones in tests/net/tls cannot show: a certificate for another
// name, or one that has expired (OpenSSL 3.0's command line cannot date
// one in the past).
#ifndef FEDLDP_TESTS_TESTING_CERTIFICATES_H_
#define FEDLDP_TESTS_TESTING_CERTIFICATES_H_

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <string>

namespace fedldp::testing {

// Writes a self-signed P-256 certificate for DNS name `name` (its CA, too)
// to `certificate` and its key to `key`, valid from `from_days` to
// `to_days` days from now; "" or why not.
inline std::string WriteCertificate(const std::string& certificate, const std::string& key,
                                    const std::string& name, long from_days, long to_days) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> x(X509_new(), &X509_free);
  if (!pkey || !x) return "cannot make a key";
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), to_days * 86400);
  X509_set_pubkey(x.get(), pkey.get());
  X509_NAME* subject = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), subject);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x.get(), x.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] :
       {std::pair{NID_subject_alt_name, "DNS:" + name},
        std::pair{NID_basic_constraints, std::string("critical,CA:TRUE")}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) return "cannot add an extension";
    X509_add_ext(x.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(x.get(), pkey.get(), EVP_sha256()) == 0) return "cannot sign";
  std::unique_ptr<FILE, decltype(&std::fclose)> c(std::fopen(certificate.c_str(), "w"),
                                                  &std::fclose);
  std::unique_ptr<FILE, decltype(&std::fclose)> k(std::fopen(key.c_str(), "w"), &std::fclose);
  if (!c || !k || PEM_write_X509(c.get(), x.get()) != 1 ||
      PEM_write_PrivateKey(k.get(), pkey.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return "cannot write " + certificate + " or " + key;
  }
  return "";
}

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_CERTIFICATES_H_

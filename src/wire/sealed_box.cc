#include "fedldp/wire/sealed_box.h"

#include <sodium.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "fedldp/base/files.h"

namespace fedldp {
namespace {

static_assert(crypto_box_SEALBYTES == kSealedBoxOverhead);

void InitSodium() {
  if (sodium_init() < 0) throw std::runtime_error("libsodium cannot be initialised");
}

Result<std::string> ReadKey(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read key file " + path};
  std::string key((std::istreambuf_iterator<char>(in)), {});
  if (key.size() != 32) {
    return Error{"key file " + path + " holds " + std::to_string(key.size()) +
                 " bytes, a key has 32"};
  }
  return key;
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

void ServerKeys::Wipe() {
  if (!secret_key.empty()) sodium_memzero(secret_key.data(), secret_key.size());
  secret_key.clear();
}

ServerKeys& ServerKeys::operator=(const ServerKeys& other) {
  if (this != &other) {
    Wipe();
    public_key = other.public_key;
    secret_key = other.secret_key;
  }
  return *this;
}

ServerKeys& ServerKeys::operator=(ServerKeys&& other) noexcept {
  if (this != &other) {
    Wipe();
    public_key = std::move(other.public_key);
    secret_key = std::move(other.secret_key);
  }
  return *this;
}

ServerKeys ServerKeys::Generate() {
  InitSodium();
  ServerKeys keys;
  keys.public_key.resize(crypto_box_PUBLICKEYBYTES);
  keys.secret_key.resize(crypto_box_SECRETKEYBYTES);
  crypto_box_keypair(reinterpret_cast<unsigned char*>(keys.public_key.data()),
                     reinterpret_cast<unsigned char*>(keys.secret_key.data()));
  return keys;
}

Result<ServerKeys> ServerKeys::Load(const std::string& public_path,
                                    const std::string& secret_path) {
  auto pub = ReadKey(public_path);
  if (!pub.ok()) return Error{pub.error()};
  auto sec = ReadKey(secret_path);
  if (!sec.ok()) return Error{sec.error()};
  ServerKeys keys(std::move(pub).value(), std::move(sec).value());
  // The pair must match: derive the public key from the secret one.
  std::string derived(crypto_box_PUBLICKEYBYTES, '\0');
  crypto_scalarmult_base(reinterpret_cast<unsigned char*>(derived.data()), Bytes(keys.secret_key));
  if (derived != keys.public_key) {
    return Error{public_path + " is not the public key of " + secret_path};
  }
  return keys;
}

Status ServerKeys::Save(const std::string& public_path, const std::string& secret_path) const {
  // The secret is created 0600 from the start; neither file replaces an
  // existing one (a key pair is made once, then loaded).
  FEDLDP_RETURN_IF_ERROR(WriteFileAtomically(secret_path, secret_key, 0600));
  return WriteFileAtomically(public_path, public_key, 0644);
}

std::string Seal(std::string_view message, std::string_view public_key) {
  if (public_key.size() != crypto_box_PUBLICKEYBYTES) {
    throw std::invalid_argument("a public key has 32 bytes");
  }
  InitSodium();
  std::string sealed(message.size() + crypto_box_SEALBYTES, '\0');
  crypto_box_seal(reinterpret_cast<unsigned char*>(sealed.data()), Bytes(message), message.size(),
                  Bytes(public_key));
  return sealed;
}

Result<std::string> Unseal(std::string_view sealed, const ServerKeys& keys) {
  if (sealed.size() < crypto_box_SEALBYTES) return Error{"sealed report too short"};
  if (keys.public_key.size() != crypto_box_PUBLICKEYBYTES ||
      keys.secret_key.size() != crypto_box_SECRETKEYBYTES) {
    return Error{"server keys have the wrong size"};
  }
  InitSodium();
  std::string message(sealed.size() - crypto_box_SEALBYTES, '\0');
  if (crypto_box_seal_open(reinterpret_cast<unsigned char*>(message.data()), Bytes(sealed),
                           sealed.size(), Bytes(keys.public_key), Bytes(keys.secret_key)) != 0) {
    return Error{
        "sealed report does not open with the server's key (altered, or sealed to another key)"};
  }
  return message;
}

}  // namespace fedldp

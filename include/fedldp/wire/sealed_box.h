// Reports sealed to the server's public key (libsodium sealed boxes:
// X25519 + XSalsa20-Poly1305 under an ephemeral key), so that a shuffler
// between clients and server can forward a report but not read it, and
// cannot alter it without the server noticing. The sender stays anonymous to
// the server: a sealed box carries no sender key. Overhead: 48 bytes.
#ifndef FEDLDP_WIRE_SEALED_BOX_H_
#define FEDLDP_WIRE_SEALED_BOX_H_

#include <string>
#include <string_view>
#include <utility>

#include "fedldp/base/status.h"

namespace fedldp {

inline constexpr std::size_t kSealedBoxOverhead = 48;

struct ServerKeys {
  std::string public_key;  // 32 bytes, given to clients
  std::string secret_key;  // 32 bytes, never leaves the server
  // Both files' contents are raw keys; SaveKeys writes the secret one with
  // mode 0600.
  static ServerKeys Generate();
  static Result<ServerKeys> Load(const std::string& public_path, const std::string& secret_path);
  Status Save(const std::string& public_path, const std::string& secret_path) const;

  ServerKeys() = default;
  ServerKeys(std::string public_key, std::string secret_key)
      : public_key(std::move(public_key)), secret_key(std::move(secret_key)) {}
  ServerKeys(const ServerKeys&) = default;
  ServerKeys(ServerKeys&&) noexcept = default;
  ServerKeys& operator=(const ServerKeys& other);
  ServerKeys& operator=(ServerKeys&& other) noexcept;
  // The secret key's bytes are overwritten (sodium_memzero) before its
  // memory is freed: best effort, as copies made elsewhere are not.
  ~ServerKeys() { Wipe(); }
  void Wipe();
};

// Seals `message` to `public_key` (32 bytes); throws std::invalid_argument on
// a key of another size.
std::string Seal(std::string_view message, std::string_view public_key);
// Opens a sealed box; an error if it was not sealed to these keys or was
// altered.
Result<std::string> Unseal(std::string_view sealed, const ServerKeys& keys);

}  // namespace fedldp

#endif  // FEDLDP_WIRE_SEALED_BOX_H_

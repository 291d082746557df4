// The system's OpenSSL libcrypto (Debian: libssl-dev), for the token store's AES-256-GCM,
// random numbers and scrypt. swift-nio-ssl's BoringSSL is linked too, with prefixed symbols,
// so the two do not collide.
#ifndef C_BEARERD_CRYPTO_H
#define C_BEARERD_CRYPTO_H
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/kdf.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#endif
